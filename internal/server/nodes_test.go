package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/control/nodes"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// lostWithin bounds how long a stopped node takes to be seen lost and
// its sandboxes marked: the bound, then a sweep's period, and slack for
// a loaded machine.
const lostWithin = store.LostAfter + 3*store.HeartbeatEvery + 3*time.Second

// eventually calls check until it returns nil or within has passed,
// then fails t with what it said last.
func eventually(t *testing.T, within time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nodeState is the state GET /v1/nodes shows of name, and its leases.
func nodeState(ctx context.Context, c *client.Client, name string) (string, []string, error) {
	l, err := c.Nodes(ctx)
	if err != nil {
		return "", nil, err
	}
	for _, n := range l.Nodes {
		if n.Name == name {
			return n.State, n.Leases, nil
		}
	}
	return "", nil, errors.New("node " + name + " is not listed")
}

// wantCode fails t unless err is the API's error code.
func wantCode(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != status || e.Code != code {
		t.Errorf("%s: %v; want %d %s", what, err, status, code)
	}
}

// TestNodes: two control planes on one Postgres, each a node. Both are
// listed by GET /v1/nodes, the first holding the fleet lease; the one
// stopped is listed lost within the bound, its sandbox unavailable (503
// sandbox_unavailable to an exec) and the lease the survivor's; started
// again, it re-attaches its sandbox, running; drained with a deadline
// through the other, it refuses creates (503 node_draining) and stops
// its sandbox at the deadline, while the other still creates; activated,
// it creates again.
func TestNodes(t *testing.T) {
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
	cfgB.NodeLabels = map[string]string{"zone": "b"}
	a := startServer(t, cfgA, loggerA)
	b := startServer(t, cfgB, loggerB)
	key, err := os.ReadFile(a.AdminKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(key))
	ca, cb := client.New("http://"+a.Addr().String(), admin), client.New("http://"+b.Addr().String(), admin)

	eventually(t, 2*store.HeartbeatEvery+time.Second, "both nodes listed active, node-a holding the fleet lease", func() error {
		l, err := cb.Nodes(ctx)
		if err != nil {
			return err
		}
		if len(l.Nodes) != 2 || l.Nodes[0].Name != "node-a" || l.Nodes[1].Name != "node-b" {
			return errors.New("nodes listed: " + strings.Join(names(l.Nodes), ", "))
		}
		na, nb := l.Nodes[0], l.Nodes[1]
		if na.State != api.NodeActive || nb.State != api.NodeActive || !slices.Equal(na.Leases, []string{nodes.FleetLease}) || len(nb.Leases) != 0 {
			return errors.New("states " + na.State + ", " + nb.State + "; leases " + strings.Join(na.Leases, ",") + " / " + strings.Join(nb.Leases, ","))
		}
		if nb.Labels["zone"] != "b" || !slices.Contains(nb.Drivers, "process") || !strings.HasPrefix(nb.Advertise, "http://127.0.0.1:") {
			return errors.New("node-b's row lacks its labels, drivers or address")
		}
		return nil
	})
	if _, err := client.New("http://"+a.Addr().String(), "hk_nope_nope").Nodes(ctx); err == nil {
		t.Error("GET /v1/nodes without a valid key answered")
	}
	member, err := ca.CreateKey(ctx, api.CreateKeyRequest{Name: "m", Role: api.RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	cm := client.New("http://"+b.Addr().String(), member.Secret)
	_, err = cm.Nodes(ctx)
	wantCode(t, "GET /v1/nodes with a member's key", err, 403, "admin_required")
	_, err = cm.DrainNode(ctx, "node-a", 0)
	wantCode(t, "a drain with a member's key", err, 403, "admin_required")

	sb, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Node != "node-a" {
		t.Fatalf("a sandbox created through node-a is on %q", sb.Node)
	}
	if _, err := ca.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}

	// node-a stops: it is lost, its sandbox unavailable, the lease node-b's.
	stopped := time.Now()
	a.Shutdown(ctx)
	eventually(t, lostWithin, "node-a lost, its sandbox unavailable, the lease node-b's", func() error {
		st, _, err := nodeState(ctx, cb, "node-a")
		if err != nil || st != api.NodeLost {
			return errors.New("node-a is " + st)
		}
		if _, leases, _ := nodeState(ctx, cb, "node-b"); !slices.Equal(leases, []string{nodes.FleetLease}) {
			return errors.New("node-b holds no fleet lease")
		}
		got, err := cb.GetSandbox(ctx, sb.ID)
		if err != nil || got.State != api.StateUnavailable {
			return errors.New("the sandbox is " + string(got.State))
		}
		return nil
	})
	t.Logf("node-a lost and its sandbox unavailable %v after it stopped", time.Since(stopped).Round(100*time.Millisecond))
	_, err = cb.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}})
	wantCode(t, "an exec of the lost node's sandbox", err, 503, "sandbox_unavailable")

	// node-a starts again: its sandbox is re-attached, running.
	a = startServer(t, cfgA, loggerA)
	ca = client.New("http://"+a.Addr().String(), admin)
	got, err := ca.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StateRunning {
		t.Fatalf("after node-a's restart its sandbox is %v, %v; want running", got.State, err)
	}
	if _, err := ca.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Errorf("exec after the re-attach: %v", err)
	}
	evs, err := ca.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventSandboxUnavailable, api.EventSandboxAvailable}})
	if err != nil || len(evs.Events) != 2 || evs.Events[0].Type != api.EventSandboxUnavailable || evs.Events[1].Type != api.EventSandboxAvailable {
		t.Errorf("the sandbox's node events = %+v, %v; want unavailable then available", evs, err)
	}
	eventually(t, 2*store.HeartbeatEvery+time.Second, "node-a active again", func() error {
		if st, _, err := nodeState(ctx, cb, "node-a"); err != nil || st != api.NodeActive {
			return errors.New("node-a is " + st)
		}
		return nil
	})

	// node-a is drained through node-b: it refuses creates, and stops its
	// sandbox at the deadline; node-b still creates.
	d, err := cb.DrainNode(ctx, "node-a", time.Second)
	if err != nil || d.State != api.NodeDraining || d.DrainDeadline == nil {
		t.Fatalf("DrainNode = %+v, %v", d, err)
	}
	eventually(t, 2*store.HeartbeatEvery+time.Second, "creates on the drained node refused", func() error {
		_, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
		var e *client.Error
		if errors.As(err, &e) && e.StatusCode == 503 && e.Code == "node_draining" {
			return nil
		}
		return errors.New("a create on node-a answered " + errString(err))
	})
	eventually(t, 3*store.HeartbeatEvery+2*time.Second, "the drained node's sandbox stopped at the deadline", func() error {
		got, err := cb.GetSandbox(ctx, sb.ID)
		if err != nil || got.State != api.StateStopped {
			return errors.New("the sandbox is " + string(got.State))
		}
		return nil
	})
	if other, err := cb.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil || other.Node != "node-b" {
		t.Errorf("a create through node-b while node-a drains: %+v, %v", other, err)
	}
	if n, err := cb.ActivateNode(ctx, "node-a"); err != nil || n.State != api.NodeActive || n.DrainDeadline != nil {
		t.Fatalf("ActivateNode = %+v, %v", n, err)
	}
	eventually(t, 2*store.HeartbeatEvery+time.Second, "creates on the activated node admitted", func() error {
		sb, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			return err
		}
		if sb.Node != "node-a" {
			return errors.New("created on " + sb.Node)
		}
		return nil
	})
	if got, err := ca.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StateStopped {
		t.Errorf("the sandbox the drain stopped, after the node's activation: %v, %v; want still stopped", got.State, err)
	}
	_, err = cb.Node(ctx, "nobody")
	wantCode(t, "GET /v1/nodes/nobody", err, 404, "node_not_found")
	err = cb.RemoveNode(ctx, "node-a")
	wantCode(t, "DELETE /v1/nodes/node-a while it heartbeats", err, 409, "node_not_lost")

	// node-a goes for good, with a running sandbox and a stopped one:
	// removed, both fail (out of the quotas), and node-b destroys them.
	running, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil || running.Node != "node-a" {
		t.Fatalf("a create through node-a: %+v, %v", running, err)
	}
	a.Shutdown(ctx)
	eventually(t, lostWithin, "node-a lost again", func() error {
		if st, _, err := nodeState(ctx, cb, "node-a"); err != nil || st != api.NodeLost {
			return errors.New("node-a is " + st)
		}
		return nil
	})
	if err := cb.RemoveNode(ctx, "node-a"); err != nil {
		t.Fatalf("DELETE /v1/nodes/node-a once lost: %v", err)
	}
	if l, err := cb.Nodes(ctx); err != nil || len(l.Nodes) != 1 || l.Nodes[0].Name != "node-b" {
		t.Errorf("nodes after node-a's removal: %+v, %v", l, err)
	}
	for _, id := range []string{sb.ID, running.ID} {
		got, err := cb.GetSandbox(ctx, id)
		if err != nil || got.State != api.StateFailed || got.Error != "its node node-a was removed" || got.Node != "" {
			t.Fatalf("sandbox %s of the removed node: %+v, %v; want failed, of no node", id, got, err)
		}
		if err := cb.DeleteSandbox(ctx, id); err != nil {
			t.Fatalf("destroy %s of the removed node through node-b: %v", id, err)
		}
		if got, err := cb.GetSandbox(ctx, id); err != nil || got.State != api.StateDestroyed {
			t.Errorf("sandbox %s after its destroy: %+v, %v", id, got, err)
		}
	}
	err = cb.RemoveNode(ctx, "node-a")
	wantCode(t, "DELETE /v1/nodes/node-a again", err, 404, "node_not_found")
}

// startServer starts a server of cfg, shut down when t ends.
func startServer(t *testing.T, cfg config.Config, logger *slog.Logger) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg, logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func names(ns []api.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
