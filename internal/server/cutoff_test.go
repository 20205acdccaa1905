package server

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestCutOff: a node whose heartbeats cannot land (its row held locked
// by another transaction, as a store it cannot reach would) is found
// lost by the lease's holder, which marks its sandbox unavailable; once
// its heartbeats land again it takes the sandbox back, running, without
// a restart, and the sandbox answers again.
func TestCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a lost node's bound")
	}
	ctx := context.Background()
	url := testutil.PostgresURL(t)
	var logA, logB bytes.Buffer
	cfgA, loggerA := testConfig(t, &logA)
	cfgB, loggerB := testConfig(t, &logB)
	cfgA.Store, cfgA.StoreURL, cfgA.Node = "postgres", url, "node-a"
	cfgB.Store, cfgB.StoreURL, cfgB.Node = "postgres", url, "node-b"
	b := startServer(t, cfgB, loggerB) // first: it holds the fleet lease
	a := startServer(t, cfgA, loggerA)
	key, err := os.ReadFile(b.AdminKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(key))
	ca, cb := client.New("http://"+a.Addr().String(), admin), client.New("http://"+b.Addr().String(), admin)
	sb, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM nodes WHERE name = 'node-a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	eventually(t, lostWithin, "node-a, cut off, found lost and its sandbox unavailable", func() error {
		if st, _, err := nodeState(ctx, cb, "node-a"); err != nil || st != api.NodeLost {
			return errors.New("node-a is " + st)
		}
		if got, err := cb.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StateUnavailable {
			return errors.New("the sandbox is " + string(got.State))
		}
		return nil
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	eventually(t, 3*store.HeartbeatEvery+3*time.Second, "node-a's sandbox taken back once it heartbeats again", func() error {
		got, err := ca.GetSandbox(ctx, sb.ID)
		if err != nil || got.State != api.StateRunning {
			return errors.New("the sandbox is " + string(got.State))
		}
		return nil
	})
	t.Logf("node-a took its sandbox back %v after it reached the store again", time.Since(back).Round(100*time.Millisecond))
	if _, err := ca.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Errorf("exec after node-a took its sandbox back: %v", err)
	}
	evs, err := ca.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventSandboxUnavailable, api.EventSandboxAvailable}})
	if err != nil || len(evs.Events) != 2 || evs.Events[1].Type != api.EventSandboxAvailable || !strings.Contains(evs.Events[1].Message, "reached the store again") {
		t.Errorf("the sandbox's node events = %+v, %v; want unavailable, then available as node-a reached the store again", evs, err)
	}
	if st, _, err := nodeState(ctx, cb, "node-a"); err != nil || st != api.NodeActive {
		t.Errorf("node-a after its heartbeats land again: %q, %v; want active", st, err)
	}
}
