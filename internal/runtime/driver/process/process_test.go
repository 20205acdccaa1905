package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/drivertest"
	"github.com/hutchdev/hutch/internal/runtime/driver/process"
	"github.com/hutchdev/hutch/internal/testutil"
)

var agentPath string

func TestMain(m *testing.M) {
	dir, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		panic(err)
	}
	agentPath = filepath.Join(dir, "hutch-agent")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	base, err := os.MkdirTemp("", "hutch-process-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// As root, each sandbox's own uid looks its directory up by path.
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "sandboxes")
	drivertest.Run(t, drivertest.Suite{
		New: func(t *testing.T) driver.Driver {
			d, err := process.New(process.Config{Dir: dir, AgentPath: agentPath, WarmPool: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := d.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d
		},
		Leftovers: func(id string) []string {
			if _, err := os.Lstat(filepath.Join(dir, id)); err == nil {
				return []string{filepath.Join(dir, id)}
			}
			return nil
		},
	})
}

// TestClosedDirectory: as root, a directory its sandboxes' uids cannot
// reach is an error that names it and the fix, and no mode changes.
func TestClosedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs sandboxes as uids of their own")
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := process.New(process.Config{Dir: filepath.Join(base, "data", "process"), AgentPath: agentPath})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), base+" (0700)") || !strings.Contains(err.Error(), "chmod o+x") {
		t.Fatalf("Open = %v; want an error naming %s and the fix", err, base)
	}
	for p, want := range map[string]os.FileMode{base: 0o700, filepath.Join(base, "data"): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %04o; want %04o", p, st.Mode().Perm(), want)
		}
	}
}
