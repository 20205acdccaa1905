package drivertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/internal/testutil"
)

var (
	probeOnce sync.Once
	probeBin  []byte
	probeErr  error
)

// probeBinary reads the suite's probe, or builds the probe command (see
// probe/) once per test binary.
func probeBinary(t *testing.T, s Suite) []byte {
	t.Helper()
	probeOnce.Do(func() {
		if s.Probe != "" {
			probeBin, probeErr = os.ReadFile(s.Probe)
			return
		}
		dir, err := testutil.Build("internal/runtime/driver/drivertest/probe")
		if err != nil {
			probeErr = err
			return
		}
		defer os.RemoveAll(dir)
		probeBin, probeErr = os.ReadFile(filepath.Join(dir, "probe"))
	})
	if probeErr != nil {
		t.Fatalf("build the probe: %v", probeErr)
	}
	return probeBin
}

// uploadProbe puts the probe in the sandbox's working directory through
// the file API and returns its path there.
func uploadProbe(t *testing.T, s Suite, sb *sandbox) string {
	t.Helper()
	if _, err := sb.agent.WriteFile(context.Background(), "probe", "0755", false, strings.NewReader(string(probeBinary(t, s)))); err != nil {
		t.Fatalf("upload the probe: %v", err)
	}
	return filepath.Join(sb.handle.Workdir, "probe")
}

// probeSyscalls runs `probe syscalls` and fails t for every attempt that
// worked.
func probeSyscalls(t *testing.T, s Suite, sb *sandbox) {
	t.Helper()
	out := sh(t, sb, uploadProbe(t, s, sb)+" syscalls")
	var res map[string]string
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	if len(res) < 40 {
		t.Fatalf("probe made %d attempts, want every one of them: %v", len(res), res)
	}
	for name, r := range res {
		if r == "ok" {
			t.Errorf("the sandbox could %s", name)
		}
	}
}
