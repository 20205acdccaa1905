package server

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/nodes"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestLeaseOnKill: a real hutch serve that holds the fleet lease and is
// killed with SIGKILL (no shutdown, no release) loses the lease within
// its TTL and a period: the other node, in process, takes it, and lists
// the killed one lost within the bound.
func TestLeaseOnKill(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a lease's TTL")
	}
	ctx := context.Background()
	sys := tenancy.System(ctx)
	var log bytes.Buffer
	cfg, logger := testConfig(t, &log)
	cfg.Store, cfg.StoreURL, cfg.Node = "postgres", testutil.PostgresURL(t), "node-b"
	bin, err := testutil.Build("cmd/hutch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	st, err := postgres.Open(ctx, cfg.StoreURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	holder := func() string {
		ls, err := st.ListLeases(sys)
		if err != nil {
			return "error: " + err.Error()
		}
		for _, l := range ls {
			if l.Name == nodes.FleetLease {
				return l.Holder
			}
		}
		return ""
	}

	var out testutil.Buffer
	cmd := exec.Command(filepath.Join(bin, "hutch"), "serve", "--listen", "127.0.0.1:0", "--data", testutil.DataDir(t),
		"--store", "postgres", "--node", "node-a", "--driver", "process", "--agent", cfg.AgentPath, "--warm-pool", "0")
	cmd.Env = append(os.Environ(), "HUTCH_STORE_URL="+cfg.StoreURL)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	eventually(t, 30*time.Second, "the hutch serve process holds the fleet lease", func() error {
		if h := holder(); h != "node-a" {
			return errors.New("the lease's holder is " + h + "; its output: " + out.String())
		}
		return nil
	})
	startServer(t, cfg, logger)
	if h := holder(); h != "node-a" {
		t.Fatalf("node-b's start took the lease from its live holder: %q", h)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	at := time.Now()
	eventually(t, nodes.LeaseTTL+2*store.HeartbeatEvery+3*time.Second, "the killed node's lease taken by node-b", func() error {
		if h := holder(); h != "node-b" {
			return errors.New("the lease's holder is " + h)
		}
		return nil
	})
	took := time.Since(at)
	if took < nodes.LeaseTTL-2*store.HeartbeatEvery {
		t.Errorf("node-b took the lease %v after the kill, before the killed node's TTL could run out", took)
	}
	t.Logf("node-b took the fleet lease %v after node-a's SIGKILL", took.Round(100*time.Millisecond))
	eventually(t, lostWithin, "the killed node listed lost", func() error {
		ns, err := st.ListNodes(sys)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(ns, func(n *store.Node) bool { return n.Name == "node-a" })
		if i < 0 || !ns[i].Lost() {
			return errors.New("node-a is not lost")
		}
		return nil
	})
}
