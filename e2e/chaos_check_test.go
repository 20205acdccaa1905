package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// The chaos test's checks after each restart (chaos_test.go).

// check runs through c after the restart that follows round's kill.
func (w *chaosWorld) check(c *client.Client, round int, rng *mrand.Rand) {
	t := w.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	where := fmt.Sprintf("after round %d", round)

	// Recovery ran before the server answered: nothing is transitional,
	// and a sandbox the test was never told of (its create cut short)
	// was made whole or failed.
	listed := map[string]api.Sandbox{}
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			t.Fatalf("%s: list sandboxes: %v", where, err)
		}
		listed[sb.ID] = sb
		switch sb.State {
		case api.StateCreating, api.StateStarting, api.StateStopping, api.StateDestroying:
			t.Errorf("%s: sandbox %s left %s", where, sb.ID, sb.State)
		}
		if w.boxes[sb.ID] != nil {
			continue
		}
		switch sb.State {
		case api.StateRunning:
			// Made whole: it joins the load, with nothing acknowledged.
			w.boxes[sb.ID] = &chaosBox{id: sb.ID, node: sb.Node, state: api.StateRunning, files: map[string]string{}, procs: map[int]string{}}
		case api.StateFailed, api.StateDestroyed:
		default:
			t.Errorf("%s: sandbox %s, whose create was cut short, is %s (%s); want running or failed", where, sb.ID, sb.State, sb.Error)
		}
	}

	// Every sandbox is as it was acknowledged.
	boxIDs := slices.Sorted(maps.Keys(w.boxes))
	for _, id := range boxIDs {
		b := w.boxes[id]
		sb, ok := listed[id]
		if !ok {
			t.Errorf("%s: acknowledged sandbox %s is not listed", where, id)
			continue
		}
		if !b.is(sb.State) {
			t.Errorf("%s: sandbox %s is %s (%s); acknowledged %s, maybe %v; calls %q", where, id, sb.State, sb.Error, b.state, b.maybe, b.calls)
		}
		if sb.State != api.StateRunning && sb.State != api.StatePaused {
			clear(b.procs) // they went with its agent
		}
		b.settle(sb.State)
	}

	states, files, procs := map[api.SandboxState]int{}, 0, 0
	for _, b := range w.boxes {
		states[b.state]++
		files += len(b.files)
		procs += len(b.procs)
	}
	t.Logf("%s: sandboxes %v, %d files, %d processes, %d snapshots acknowledged", where, states, files, procs, len(w.snaps))

	// The records and what is outside the store agree.
	w.checkLeftovers(c, where, listed)

	// What running and paused sandboxes hold, processes and output too;
	// stopped ones are started for it.
	for _, id := range boxIDs {
		b := w.boxes[id]
		switch b.state {
		case api.StateStopped:
			if _, err := c.StartSandbox(ctx, id); err != nil {
				t.Errorf("%s: start %s: %v; calls %q", where, id, err, b.calls)
				continue
			}
			b.state = api.StateRunning
		case api.StatePaused:
			if len(b.files) == 0 && len(b.procs) == 0 {
				continue // nothing to read: it stays paused
			}
			b.state = api.StateRunning // the reads below resume it
		case api.StateRunning:
		default:
			continue
		}
		w.checkFiles(ctx, c, where, id, b.files)
		for _, pid := range slices.Sorted(maps.Keys(b.procs)) {
			p, err := c.GetProcess(ctx, id, pid)
			if err != nil || !p.Running {
				t.Errorf("%s: process %d of %s after the restart: %+v, %v; want it running", where, pid, id, p, err)
				delete(b.procs, pid)
				continue
			}
			out, err := processOutput(ctx, c, id, pid)
			if err != nil || !strings.HasPrefix(out, b.procs[pid]) {
				t.Errorf("%s: output of process %d of %s from 0 = %q, %v; want it to begin with what was read before, %q", where, pid, id, out, err, b.procs[pid])
			}
			b.procs[pid] = out
		}
	}

	// Every acknowledged snapshot is there, and one serves a new sandbox.
	list, err := c.ListSnapshots(ctx, "")
	if err != nil {
		t.Fatalf("%s: list snapshots: %v", where, err)
	}
	have := map[string]bool{}
	for _, sn := range list.Snapshots {
		have[sn.ID] = true
	}
	snaps := slices.Sorted(maps.Keys(w.snaps))
	for _, id := range snaps {
		if _, err := c.GetSnapshot(ctx, id); err != nil || !have[id] {
			t.Errorf("%s: acknowledged snapshot %s (of %s): listed %v, %v", where, id, w.snaps[id].sandbox, have[id], err)
		}
	}
	if len(snaps) > 0 {
		sn := w.snaps[snaps[rng.IntN(len(snaps))]]
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Snapshot: sn.id})
		if err != nil {
			t.Errorf("%s: a sandbox from snapshot %s: %v", where, sn.id, err)
		} else {
			w.checkFiles(ctx, c, where+", from snapshot "+sn.id, sb.ID, sn.files)
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Errorf("%s: destroy %s: %v", where, sb.ID, err)
			}
			w.boxes[sb.ID] = &chaosBox{id: sb.ID, state: api.StateDestroyed}
		}
	}
}

// checkFiles reads back each of files in sandbox id.
func (w *chaosWorld) checkFiles(ctx context.Context, c *client.Client, where, id string, files map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		got, err := readFile(ctx, c, id, name)
		if err != nil || got != files[name] {
			w.t.Errorf("%s: %s of %s = %q, %v; acknowledged %q", where, name, id, got, err, files[name])
		}
	}
}

// checkLeftovers compares what the store lists (through c) with what is
// outside it, at each node's place: the driver's sandbox directories,
// the snapshots' files, the cgroups and the agents' processes. listed
// are the sandboxes as listed (empty: all destroyed).
func (w *chaosWorld) checkLeftovers(c *client.Client, where string, listed map[string]api.Sandbox) {
	onDisk := map[string]bool{} // every node's snapshot directories
	for _, pl := range w.places {
		mine := map[string]api.Sandbox{}
		for id, sb := range listed {
			if pl.node == "" || sb.Node == pl.node {
				mine[id] = sb
			}
		}
		at := where
		if pl.node != "" {
			at += ", node " + pl.node
		}
		w.checkPlace(pl, at, mine)
		ents, _ := os.ReadDir(filepath.Join(pl.dataDir, "snapshots"))
		for _, e := range ents {
			onDisk[e.Name()] = true // a copy a crash cut short, too
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := c.ListSnapshots(ctx, "")
	if err != nil {
		w.t.Fatalf("%s: list snapshots: %v", where, err)
	}
	recorded := map[string]bool{}
	for _, sn := range list.Snapshots {
		recorded[sn.ID] = true
	}
	diff(w.t, where, "snapshot directories", onDisk, recorded)
}

// checkPlace is checkLeftovers at one node's place, of the sandboxes
// listed there.
func (w *chaosWorld) checkPlace(pl chaosPlace, where string, listed map[string]api.Sandbox) {
	t := w.t
	kept := map[string]bool{}   // a directory and cgroups
	agents := map[string]bool{} // an agent too
	for id, sb := range listed {
		switch sb.State {
		case api.StateRunning, api.StatePaused:
			agents[id] = true
			kept[id] = true
		case api.StateStopped:
			kept[id] = true
		}
	}

	nsDir := filepath.Join(pl.dataDir, "sandboxes", "namespace")
	ents, err := os.ReadDir(nsDir)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	dirs := map[string]bool{}
	for _, e := range ents {
		if ids.Valid(e.Name()) {
			dirs[e.Name()] = true
		}
	}
	diff(t, where, "sandbox directories", dirs, kept)
	// The warm sandboxes of earlier servers went with the sweep: only
	// this server's pool is left.
	if pools, _ := os.ReadDir(filepath.Join(nsDir, ".warm")); len(pools) > 1 {
		t.Errorf("%s: warm pools of earlier servers left: %v", where, names(pools))
	}
	// Each host uid range registered to a sandbox of this data directory
	// is one whose directory is there, once the driver's reaper has
	// walked for those a destroy just retired (the restart's sweep walks
	// before the server answers).
	var stale []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stale = stale[:0]
		regs, _ := filepath.Glob(filepath.Join(hostids.Registry, "*"))
		for _, r := range regs {
			b, err := os.ReadFile(r)
			if owner := string(b); err == nil && strings.HasPrefix(owner, nsDir+"/") && !dirExists(owner) {
				stale = append(stale, filepath.Base(r)+" is still registered to "+owner)
			}
		}
		if len(stale) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, r := range stale {
		t.Errorf("%s: host uid range %s, which is gone", where, r)
	}

	// The trash empties in the background.
	waitUntil(t, where+": the driver's trash emptied", func() bool {
		ents, _ := os.ReadDir(filepath.Join(nsDir, ".trash"))
		return len(ents) == 0
	})

	cgroups := map[string]bool{}
	for _, root := range cgroupRoots(pl.parent) {
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if e.IsDir() && ids.Valid(e.Name()) {
				cgroups[e.Name()] = true
			}
		}
	}
	diff(t, where, "sandbox cgroups", cgroups, kept)

	diff(t, where, "sandboxes with processes", sandboxProcesses(pl.parent), agents)
}

// diff reports the names in got but not want and those in want but not
// got.
func diff(t *testing.T, where, what string, got, want map[string]bool) {
	t.Helper()
	var extra, missing []string
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	if len(extra)+len(missing) > 0 {
		sort.Strings(extra)
		sort.Strings(missing)
		t.Errorf("%s: %s: %v not in the store, %v missing", where, what, extra, missing)
	}
}

// processOutput is the stdout of process pid from cursor 0 to now.
func processOutput(ctx context.Context, c *client.Client, id string, pid int) (string, error) {
	st, err := c.ProcessOutput(ctx, id, pid, 0, false)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		switch ev.Type {
		case api.OutputStdout:
			b.Write(ev.Data)
		case api.OutputDropped:
			return b.String(), fmt.Errorf("%d bytes dropped", ev.Dropped)
		}
	}
}

func readFile(ctx context.Context, c *client.Client, id, name string) (string, error) {
	r, err := c.ReadFile(ctx, id, name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func names(ents []os.DirEntry) []string {
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
