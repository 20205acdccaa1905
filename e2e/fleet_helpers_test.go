package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// twoNodes is a fleet of two hutch serve processes, nodes a and b, on one
// Postgres, as docs/DEPLOY.md sets one up: each node has its own data
// directory, its own cgroup parent for the namespace driver, and uid
// ranges of its own (the host-wide registry keeps them apart); they share
// the store, the cluster key, the secrets master key and the admin key.
// Node n carries the label zone=n, so a create may ask for either.
type twoNodes struct {
	t       *testing.T
	env     []string
	dirs    map[string]string
	parents map[string]string
	nodes   map[string]*server
	logs    map[string][]*fullLog // each start's whole log, by node
}

// lostPatience bounds the wait for a node killed to be seen lost and
// its sandboxes unavailable: its heartbeat is stale after 10 s, and the
// fleet-wide lease of the marking, if the killed node held it, passes to
// the other within its 10 s TTL.
const lostPatience = time.Minute

// fleetNodes are the nodes' names.
var fleetNodes = []string{"a", "b"}

// startTwoNodes starts nodes a and b and waits until each lists the other
// active.
func startTwoNodes(t *testing.T) *twoNodes {
	t.Helper()
	f := &twoNodes{
		t: t,
		env: []string{"HUTCH_STORE_URL=" + testutil.PostgresURL(t),
			"HUTCH_CLUSTER_KEY=" + randHex(32), "HUTCH_SECRETS_KEY=" + randHex(32)},
		dirs: map[string]string{}, parents: map[string]string{},
		nodes: map[string]*server{}, logs: map[string][]*fullLog{},
	}
	for _, n := range fleetNodes {
		dir, parent := testutil.DataDir(t), "hutch-fleet-"+n+"-"+randHex(4)
		f.dirs[n], f.parents[n] = dir, parent
		// Registered before any server's stop, so it runs after them all.
		t.Cleanup(func() { cleanupHost(t, parent, dir) })
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, n := range fleetNodes {
			for i, l := range f.logs[n] {
				for _, line := range strings.Split(l.String(), "\n") {
					if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
						t.Logf("node %s, start %d: %s", n, i, line)
					}
				}
			}
		}
	})
	f.start("a")
	// The admin key a's first start made is the fleet's: b is given it,
	// as an operator copies it.
	key, err := os.ReadFile(filepath.Join(f.dirs["a"], "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dirs["b"], "admin.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	f.start("b")
	for _, n := range fleetNodes {
		f.waitNodes(n, api.NodeActive, fleetNodes...)
	}
	return f
}

// start runs node n's hutch serve (again, after a stop or a kill) and
// waits until it serves.
func (f *twoNodes) start(n string) *server {
	f.t.Helper()
	s, full := launch(f.t, nil, f.dirs[n], f.env, "--store", "postgres", "--node", n, "--node-label", "zone="+n,
		"--driver", "namespace", "--cgroup-parent", f.parents[n],
		// No memory policy of the host's pauses or stops a sandbox
		// behind the test's back.
		"--memory-low-pct", "0", "--memory-critical-pct", "0")
	f.nodes[n] = s
	f.logs[n] = append(f.logs[n], full)
	return s
}

// other is the node that is not n.
func other(n string) string {
	if n == "a" {
		return "b"
	}
	return "a"
}

// waitNodes waits until node via lists each of names in state.
func (f *twoNodes) waitNodes(via, state string, names ...string) {
	f.t.Helper()
	c := f.nodes[via].client()
	var last *api.NodeList
	for deadline := time.Now().Add(lostPatience); ; time.Sleep(250 * time.Millisecond) {
		if list, err := c.Nodes(context.Background()); err == nil {
			last = list
			if listsAll(list, state, names) {
				return
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("node %s never listed %s %s: %s", via, strings.Join(names, ", "), state, sprintNodes(last))
		}
	}
}

// listsAll reports whether list has each of names in state.
func listsAll(list *api.NodeList, state string, names []string) bool {
	for _, name := range names {
		if !slices.ContainsFunc(list.Nodes, func(n api.Node) bool { return n.Name == name && n.State == state }) {
			return false
		}
	}
	return true
}

func sprintNodes(l *api.NodeList) string {
	if l == nil {
		return "no list"
	}
	var b strings.Builder
	for _, n := range l.Nodes {
		b.WriteString(n.Name + "=" + n.State + " ")
	}
	return b.String()
}
