package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/testutil"
)

// fleet is two hutch serve, nodes "a" and "b", on one Postgres with one
// cluster key; node a is reached by other nodes through tap, which keeps
// every byte sent to it.
type fleet struct {
	a, b  *Server
	admin string // the admin key
	st    *postgres.Store
	tap   *tap
}

// startFleet starts the two nodes and keeps their registry rows fresh
// (the test stands in for the nodes' own heartbeats) until t ends;
// change, if set, adjusts each node's configuration.
func startFleet(t *testing.T, change func(node string, cfg *config.Config)) *fleet {
	t.Helper()
	t.Setenv(forward.KeyEnv, strings.Repeat("c", 64))
	pg := testutil.PostgresURL(t)
	start := func(node string) *Server {
		var log bytes.Buffer
		cfg, logger := testConfig(t, &log)
		cfg.Store, cfg.StoreURL, cfg.Node = "postgres", pg, node
		if change != nil {
			change(node, &cfg)
		}
		s, err := Start(context.Background(), cfg, logger, "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return s
	}
	f := &fleet{a: start("a")}
	f.b = start("b")
	admin, err := os.ReadFile(f.a.AdminKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	f.admin = strings.TrimSpace(string(admin))
	f.st, err = postgres.Open(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.st.Close() })
	f.tap = newTap(t, f.a.Addr().String())
	// a has more memory room than b: placement prefers it; only b is
	// labelled zone=b.
	f.heartbeat(t, map[string]store.Node{
		"a": {Name: "a", Advertise: "http://" + f.tap.addr, Drivers: []string{"process", "namespace"},
			Load: store.NodeLoad{MemoryBytes: 8 << 30, CommittedMemoryBytes: 1 << 30}},
		"b": {Name: "b", Advertise: "http://" + f.b.Addr().String(), Drivers: []string{"process", "namespace"}, Labels: map[string]string{"zone": "b"},
			Load: store.NodeLoad{MemoryBytes: 4 << 30}},
	})
	return f
}

// heartbeat registers each node as given and heartbeats it with its load
// every second until t ends.
func (f *fleet) heartbeat(t *testing.T, nodes map[string]store.Node) {
	t.Helper()
	sys := tenancy.System(context.Background())
	for _, n := range nodes {
		if _, err := f.st.RegisterNode(sys, n); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for name, n := range nodes {
					f.st.HeartbeatNode(sys, name, n.Load)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// tap is a TCP relay to a node that keeps every byte sent through it.
type tap struct {
	addr string
	mu   sync.Mutex
	sent bytes.Buffer
}

func newTap(t *testing.T, to string) *tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() {
				defer wg.Done()
				io.Copy(io.MultiWriter(out, tp), in)
				out.Close()
			}()
			go func() {
				defer wg.Done()
				io.Copy(in, out)
				in.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return tp
}

func (tp *tap) Write(p []byte) (int, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.sent.Write(p)
}

// saw returns everything sent through the tap so far.
func (tp *tap) saw() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.sent.String()
}
