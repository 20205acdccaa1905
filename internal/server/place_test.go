package server

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestPlaceAgain: a node that died since its last heartbeat (its row
// still fresh, so placement still chooses it) does not fail a create
// through a surviving node: a node refusing the connection and one whose
// address never answers are each tried once, then passed over, and the
// sandbox is made on b. When no node is left the create is 503
// node_unavailable; and a create that reached a node that then hung up
// is not sent anywhere else (it may have been made there).
func TestPlaceAgain(t *testing.T) {
	f := startFleet(t, nil)
	ctx := context.Background()
	sys := tenancy.System(ctx)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)

	// Node a stops; its row, heartbeated by the test, stays fresh and
	// now names its own address, which refuses connections.
	if _, err := f.st.RegisterNode(sys, store.Node{Name: "a", Advertise: "http://" + f.a.Addr().String(),
		Drivers: []string{"process", "namespace"}, Load: store.NodeLoad{MemoryBytes: 8 << 30, CommittedMemoryBytes: 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	f.a.Shutdown(ctx)
	// Two more nodes that are not there, with the most room of all, so
	// placement chooses them first: c refuses the connection, d's
	// address (TEST-NET-1 blackholed) never answers, or is unreachable.
	f.heartbeat(t, map[string]store.Node{
		"c": {Name: "c", Advertise: "http://" + refusing(t), Drivers: []string{"process"}, Labels: map[string]string{"zone": "gone"},
			Load: store.NodeLoad{MemoryBytes: 1 << 50}},
		"d": {Name: "d", Advertise: "http://192.0.2.1:7070", Drivers: []string{"process"},
			Load: store.NodeLoad{MemoryBytes: 1 << 51}},
	})

	start := time.Now()
	sb, err := viaB.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("create through b with d, c and a dead: %v", err)
	}
	t.Cleanup(func() { viaB.DeleteSandbox(ctx, sb.ID) })
	if sb.Node != "b" {
		t.Fatalf("created on %q, want b, the one node alive", sb.Node)
	}
	// d, c and a once each: one dial bound (d's) at most, with room.
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("create took %v placing around three dead nodes", d)
	}

	// Only c has zone=gone: once it is passed over none is left.
	_, err = viaB.CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: map[string]string{"zone": "gone"}})
	if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.StatusCode != 503 || ce.Code != "node_unavailable" {
		t.Fatalf("create for zone=gone, c dead: %v, want 503 node_unavailable", err)
	}

	// e accepts the connection and hangs up: the create may have reached
	// it, and is not tried again elsewhere.
	f.heartbeat(t, map[string]store.Node{
		"e": {Name: "e", Advertise: "http://" + hangingUp(t), Drivers: []string{"process"}, Load: store.NodeLoad{MemoryBytes: 1 << 52}},
	})
	before := countOn(t, viaB, "b")
	_, err = viaB.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.StatusCode != 503 || ce.Code != "node_unavailable" {
		t.Fatalf("create placed on e, which hangs up: %v, want 503 node_unavailable", err)
	}
	if after := countOn(t, viaB, "b"); after != before {
		t.Fatalf("a create that reached e was made on b too: %d sandboxes on b, were %d", after, before)
	}
}

// refusing returns a loopback address that refuses connections.
func refusing(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hangingUp returns the address of a listener that closes every
// connection it accepts, once it has read from it, until t ends.
func hangingUp(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			c.Read(make([]byte, 1))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// countOn counts the sandboxes recorded on node.
func countOn(t *testing.T, c *client.Client, node string) int {
	t.Helper()
	list, err := c.ListSandboxes(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sb := range list.Sandboxes {
		if sb.Node == node {
			n++
		}
	}
	return n
}
