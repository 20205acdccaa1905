package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// TestSealedAtRest: the database holds neither a sandbox's env values nor
// its agent's token in clear (a host user who could read hutch.db once
// read both, and signed requests to another tenant's agent); the service
// still runs and recovers the sandbox with them.
func TestSealedAtRest(t *testing.T) {
	dbDir := t.TempDir()
	sealer, err := secrets.NewSealer(bytes.Repeat([]byte{7}, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	f := newLiveFixtureAt(t, filepath.Join(dbDir, sqlite.FileName), func(c *Config) { c.Sealer = sealer })
	const value = "hunter2-only-mine"
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Env: map[string]string{"TOKEN": value}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo $TOKEN"}})
	if err != nil || res.Stdout != value+"\n" {
		t.Fatalf("exec = %+v, %v; want the env value inside", res, err)
	}
	rec, err := f.st.GetSandbox(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var h driver.Handle
	if err := json.Unmarshal(rec.Handle, &h); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h.Token, sealedPrefix) || !strings.HasPrefix(rec.Env["TOKEN"], sealedPrefix) {
		t.Fatalf("stored token %q and env %q; want both sealed", h.Token, rec.Env["TOKEN"])
	}
	clear, err := f.svc.seals.decodeHandle(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
		b, err := os.ReadFile(filepath.Join(dbDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(value)) || bytes.Contains(b, []byte(clear.Token)) {
			t.Fatalf("%s holds the env value or the agent's token in clear", name)
		}
	}
	// A new control plane opens them again.
	f.svc.Close()
	again := f.restart(t)
	if res, err := again.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec after recovery: %+v, %v", res, err)
	}
}
