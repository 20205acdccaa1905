package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestNodeCommands: hutch node ls prints one row per node with its
// state (and the leases it holds), load, drivers, labels and heartbeat;
// --json prints the list; hutch node drain sends the deadline in seconds
// and says what the drain does; hutch node activate ends it; hutch node
// rm removes one.
func TestNodeCommands(t *testing.T) {
	beat := time.Now().Add(-time.Second)
	deadline := time.Now().Add(10 * time.Minute)
	nodes := []api.Node{
		{Name: "n1", Advertise: "http://10.0.0.1:7070", State: api.NodeActive, Drivers: []string{"namespace", "process"},
			Labels: map[string]string{"zone": "a"}, CPUs: 8, MemoryBytes: 16 << 30, CommittedMemoryBytes: 1 << 30, Running: 2,
			HeartbeatAt: beat, HeartbeatAgeMS: 1200, Leases: []string{"fleet"}},
		{Name: "n2", Advertise: "http://10.0.0.2:7070", State: api.NodeLost, Drivers: []string{"process"}, HeartbeatAgeMS: 42000},
	}
	var s recorder
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.NodeList{Nodes: nodes})
	})
	mux.HandleFunc("POST /v1/nodes/{name}/activate", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, nodes[0])
	})
	mux.HandleFunc("DELETE /v1/nodes/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/nodes/{name}/drain", func(w http.ResponseWriter, r *http.Request) {
		n := nodes[0]
		n.State, n.DrainDeadline = api.NodeDraining, &deadline
		writeTestJSON(w, http.StatusOK, n)
	})
	s.serve(t, mux)

	out, errOut, code, reqs := s.run("", "node", "ls")
	if code != 0 {
		t.Fatalf("hutch node ls exited %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !slices.Equal(reqs, []string{"GET /v1/nodes"}) {
		t.Fatalf("hutch node ls printed %q after requests %q; want a header and two rows after GET /v1/nodes", out, reqs)
	}
	for i, want := range [][]string{
		{"NAME", "STATE", "RUNNING", "MEMORY", "CPUS", "DRIVERS", "LABELS", "HEARTBEAT", "ADVERTISE"},
		{"n1", "active", "(fleet)", "2", "1.0GiB/16.0GiB", "8", "namespace,process", "zone=a", "1.2s", "ago", "http://10.0.0.1:7070"},
		{"n2", "lost", "0", "0B/-", "-", "process", "-", "42s", "ago", "http://10.0.0.2:7070"},
	} {
		if got := strings.Fields(lines[i]); !slices.Equal(got, want) {
			t.Errorf("line %d of hutch node ls = %q; want %q", i, got, want)
		}
	}

	out, _, code, _ = s.run("", "--json", "node", "ls")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") || !strings.Contains(out, `"heartbeat_age_ms": 42000`) {
		t.Errorf("hutch --json node ls = %d, %s; want the nodes as a JSON list", code, out)
	}

	out, errOut, code, reqs = s.run("", "node", "drain", "n1", "--deadline", "10m")
	if code != 0 || strings.TrimSpace(out) != "n1" || !slices.Equal(reqs, []string{`POST /v1/nodes/n1/drain {"deadline_s":600}`}) ||
		!strings.Contains(errOut, "node n1 is draining") || !strings.Contains(errOut, "stopped at") {
		t.Errorf("hutch node drain n1 --deadline 10m = %d, %q, %q after %q", code, out, errOut, reqs)
	}
	out, _, code, reqs = s.run("", "node", "activate", "n1")
	if code != 0 || strings.TrimSpace(out) != "n1" || !slices.Equal(reqs, []string{"POST /v1/nodes/n1/activate"}) {
		t.Errorf("hutch node activate n1 = %d, %q after %q", code, out, reqs)
	}
	out, _, code, reqs = s.run("", "node", "rm", "n2")
	if code != 0 || strings.TrimSpace(out) != "n2" || !slices.Equal(reqs, []string{"DELETE /v1/nodes/n2"}) {
		t.Errorf("hutch node rm n2 = %d, %q after %q", code, out, reqs)
	}
	if _, _, code, _ := s.run("", "node", "drain"); code != 2 {
		t.Errorf("hutch node drain without a name exited %d, want 2", code)
	}
}
