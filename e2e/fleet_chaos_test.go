package e2e

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// fleetChaosRounds is the fleet chaos test's size: each round costs a
// node's restart and, every other round, the wait until the survivor
// sees the node lost (about 10 s).
const fleetChaosRounds = 6

// TestFleetChaos is the chaos test across two nodes on one Postgres:
// each round runs the load through both nodes, kills one of them with
// SIGKILL while it is at work, and keeps the load going through the
// other. A call through the survivor to a sandbox it runs is always
// answered (and so is a create: placement passes over a node that does
// not answer); the survivor then answers for everything it runs as
// acknowledged, and every other round sees the dead node lost and its
// running sandboxes unavailable. The dead node restarts, re-attaches its
// sandboxes, and every sandbox of the fleet is as the calls acknowledged
// left it, with nothing left behind on either node.
//
// Some creates use an image template imported through node a, whose
// layers node b fetched from a before the load (a node fetches them
// from one that holds them; with that one dead it could not). The load
// takes no snapshots: a snapshot stays on the disk of the node that took
// it (docs/DEPLOY.md).
func TestFleetChaos(t *testing.T) {
	rng := chaosRand(t)

	f := startTwoNodes(t)
	w := &chaosWorld{t: t, boxes: map[string]*chaosBox{}, snaps: map[string]*chaosSnap{}}
	for _, n := range fleetNodes {
		w.places = append(w.places, chaosPlace{node: n, dataDir: f.dirs[n], parent: f.parents[n]})
	}
	importChaosTemplate(t, f.nodes["a"].client())
	for _, n := range fleetNodes {
		c := f.nodes[n].client()
		sb, err := c.CreateSandbox(t.Context(), api.CreateSandboxRequest{Template: chaosTemplate, NodeLabels: map[string]string{"zone": n}})
		if err != nil || sb.Node != n {
			t.Fatalf("a sandbox of template %s on node %s: %+v, %v", chaosTemplate, n, sb, err)
		}
		if err := c.DeleteSandbox(t.Context(), sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	w.template = chaosTemplate
	for round := range fleetChaosRounds {
		dead := fleetNodes[rng.IntN(len(fleetNodes))]
		vias := []chaosVia{}
		for _, n := range fleetNodes {
			vias = append(vias, chaosVia{node: n, c: f.nodes[n].client()})
		}
		load := time.Duration(300+rng.IntN(1200)) * time.Millisecond
		after := time.Duration(300+rng.IntN(700)) * time.Millisecond
		t.Logf("round %d: load for %v, then node %s killed and %v more", round, load, dead, after)
		w.runLoad(round, rng.Uint64(), vias, &chaosKill{node: dead}, f.nodes[dead].kill, load, after)
		w.checkSurvivor(f, other(dead), round, round%2 == 0)
		f.start(dead)
		w.check(f.nodes[fleetNodes[rng.IntN(len(fleetNodes))]].client(), round, rng)
	}

	// The end: everything destroyed leaves nothing behind on either node.
	w.destroyAll(f.nodes["a"].client())
}

// checkSurvivor runs while the node other than survivor is dead: the
// survivor answers for every sandbox it runs as acknowledged (its state,
// and a running one's files and processes), lists every sandbox of the
// fleet, and makes a sandbox through placement. With waitLost, it waits
// until the survivor sees the dead node lost and its running and paused
// sandboxes unavailable, and checks that a call to one is 503
// sandbox_unavailable.
func (w *chaosWorld) checkSurvivor(f *twoNodes, survivor string, round int, waitLost bool) {
	t := w.t
	c := f.nodes[survivor].client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	where := "round " + strconv.Itoa(round) + ", through survivor " + survivor
	listed := map[string]api.Sandbox{}
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			t.Fatalf("%s: list sandboxes: %v", where, err)
		}
		listed[sb.ID] = sb
	}
	checked := 0
	for _, id := range slices.Sorted(maps.Keys(w.boxes)) {
		b := w.boxes[id]
		sb, ok := listed[id]
		switch {
		case !ok:
			t.Errorf("%s: acknowledged sandbox %s (node %s) is not listed", where, id, b.node)
			continue
		case b.node != survivor:
			continue
		case !b.is(sb.State):
			t.Errorf("%s: its sandbox %s is %s (%s); acknowledged %s, maybe %v; calls %q", where, id, sb.State, sb.Error, b.state, b.maybe, b.calls)
			continue
		case sb.State != api.StateRunning:
			continue
		}
		checked++
		w.checkFiles(ctx, c, where, id, b.files)
		for _, pid := range slices.Sorted(maps.Keys(b.procs)) {
			if p, err := c.GetProcess(ctx, id, pid); err != nil || !p.Running {
				t.Errorf("%s: process %d of %s: %+v, %v; want it running", where, pid, id, p, err)
			}
		}
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil || sb.Node != survivor {
		t.Errorf("%s: a create with the other node dead: %+v, %v; want it made on %s", where, sb, err, survivor)
	} else {
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Errorf("%s: destroy %s: %v", where, sb.ID, err)
		}
		w.boxes[sb.ID] = &chaosBox{id: sb.ID, node: survivor, state: api.StateDestroyed}
	}
	t.Logf("%s: %d running sandboxes of its checked", where, checked)
	if !waitLost {
		return
	}

	dead := other(survivor)
	f.waitNodes(survivor, api.NodeLost, dead)
	var gone []string // the dead node's sandboxes that ran
	for id, sb := range listed {
		if sb.Node == dead && (sb.State == api.StateRunning || sb.State == api.StatePaused) {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		waitFor(t, where+": sandbox "+id+" of the dead node unavailable", lostPatience, func() bool {
			sb, err := c.GetSandbox(ctx, id)
			return err == nil && sb.State == api.StateUnavailable
		})
	}
	if len(gone) > 0 {
		_, err := c.Exec(ctx, gone[0], api.ExecRequest{Cmd: []string{"true"}})
		if client.Code(err) != "sandbox_unavailable" {
			t.Errorf("%s: exec in %s of the dead node: %v, want 503 sandbox_unavailable", where, gone[0], err)
		}
	}
	t.Logf("%s: node %s lost, its %d running sandboxes unavailable", where, dead, len(gone))
}
