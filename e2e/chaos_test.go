package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/hostids"
	"github.com/hutchdev/hutch/internal/ids"
	"github.com/hutchdev/hutch/internal/testutil"
)

// The chaos test's shape: rounds of load, each ended by a SIGKILL of
// hutch serve; a few workers, each the only one to act on its sandboxes
// in a round, so what it was last told about one is what the sandbox must
// be (or, for the one call the kill cut short, what that call would have
// made it).
const (
	chaosRounds   = 20
	chaosWorkers  = 4
	chaosMaxLive  = 10 // sandboxes not destroyed, at most: the host has 2 cores
	chaosMaxProcs = 2  // counter processes per sandbox
	chaosTemplate = "bb"
)

// chaosSeedEnv replays a run: its value is the seed a failed run logged.
const chaosSeedEnv = "HUTCH_CHAOS_SEED"

// kill ends the server with SIGKILL, as a crash would, and waits until
// it is gone.
func (s *server) kill() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill hutch serve: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute): // a hang guard
		s.t.Fatal("hutch serve outlived SIGKILL")
	}
	s.cmd = nil
}

// chaosBox is what the test was told about one sandbox.
type chaosBox struct {
	id string
	// state is the state the last acknowledged call left it in; maybe,
	// when set, the one the call a kill cut short would have.
	state, maybe api.SandboxState
	files        map[string]string // path → content, each write acknowledged
	procs        map[int]string    // counter process → the output seen of it
	n            int               // names files
	calls        []string          // the calls made on it and how each ended, for a failure's story
}

func (b *chaosBox) live() bool {
	return b.state != api.StateDestroyed && b.state != api.StateFailed
}

// chaosSnap is an acknowledged snapshot and the files its sandbox had
// been acknowledged to hold when it was taken.
type chaosSnap struct {
	id, sandbox string
	files       map[string]string
}

// chaosWorld is everything acknowledged so far.
type chaosWorld struct {
	t         *testing.T
	parent    string // the cgroup parent of the test's sandboxes
	snapshots bool   // the driver here can take them

	mu    sync.Mutex
	boxes map[string]*chaosBox
	snaps map[string]*chaosSnap
}

func (w *chaosWorld) liveCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, b := range w.boxes {
		if b.live() {
			n++
		}
	}
	return n
}

// TestChaos: hutch serve is killed with SIGKILL, again and again, under a
// load of creates, execs, file writes, background processes, snapshots,
// pauses, stops and destroys. After each restart every sandbox is as the
// calls acknowledged before the kill left it (the call cut short: either
// way), nothing is left half-made, running sandboxes are re-attached with
// their processes and output, every acknowledged write and snapshot is
// there, and nothing the store does not know survives on disk, in the
// cgroups or as a process.
func TestChaos(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, chaosSeedEnv, seed)
	rng := mrand.New(mrand.NewPCG(seed, 0))

	dataDir := testutil.DataDir(t)
	// A cgroup parent of the test's own: other servers on the host share
	// the default one, and their agents are none of this test's business.
	parent := "hutch-chaos-" + randHex(4)
	t.Cleanup(func() { cleanupHost(t, parent, dataDir) })
	args := []string{"--driver", "namespace", "--cgroup-parent", parent,
		// No memory policy of the host's pauses or stops a sandbox behind
		// the test's back.
		"--memory-low-pct", "0", "--memory-critical-pct", "0"}
	ctx := context.Background()

	w := &chaosWorld{t: t, parent: parent, boxes: map[string]*chaosBox{}, snaps: map[string]*chaosSnap{}}
	// Each server's warnings and errors, for a failure's story.
	var logs []*fullLog
	start := func() *server {
		s, full := launch(t, nil, dataDir, nil, args...)
		logs = append(logs, full)
		return s
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, l := range logs {
			for _, line := range strings.Split(l.String(), "\n") {
				if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
					t.Logf("server %d: %s", i, line)
				}
			}
		}
	})
	s := start()
	info, err := s.client().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.snapshots = info.Features["snapshots"]
	if !w.snapshots {
		t.Log("the namespace driver here takes no snapshots: the load takes none")
	}
	importChaosTemplate(t, s.client())

	for round := range chaosRounds {
		load := time.Duration(300+rng.IntN(1200)) * time.Millisecond
		t.Logf("round %d: load for %v", round, load)
		w.runLoad(s, round, rng.Uint64(), load)
		s = start()
		w.check(s, round, rng)
	}

	// The end: everything destroyed leaves nothing behind.
	c := s.client()
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if sb.State != api.StateDestroyed {
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Errorf("destroy %s (%s): %v", sb.ID, sb.State, err)
			}
		}
	}
	w.checkLeftovers(s, "at the end", map[string]api.Sandbox{})
	snaps, err := c.ListSnapshots(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range snaps.Snapshots {
		if err := c.DeleteSnapshot(ctx, sn.ID); err != nil {
			t.Errorf("delete snapshot %s (of %s): %v", sn.ID, sn.SandboxID, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dataDir, "snapshots")); len(ents) != 0 {
		t.Errorf("snapshot files left after every snapshot was deleted: %v", names(ents))
	}
}

// importChaosTemplate makes the busybox template some sandboxes use.
func importChaosTemplate(t *testing.T, c *client.Client) {
	t.Helper()
	img := testutil.BusyboxImage(t, testutil.BusyboxOpts())
	f, err := os.Open(testutil.WriteDockerSave(t, img, "busybox:chaos"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.ImportTemplate(context.Background(), chaosTemplate, f); err != nil {
		t.Fatalf("import the template: %v", err)
	}
}

// runLoad runs the workers against s for about d, then kills s while
// they are at work and waits until every worker has stopped.
func (w *chaosWorld) runLoad(s *server, round int, seed uint64, d time.Duration) {
	t := w.t
	var killed atomic.Bool
	owned := make([][]*chaosBox, chaosWorkers)
	w.mu.Lock()
	all := make([]string, 0, len(w.boxes))
	for id, b := range w.boxes {
		if b.live() {
			all = append(all, id)
		}
	}
	sort.Strings(all)
	for i, id := range all {
		owned[i%chaosWorkers] = append(owned[i%chaosWorkers], w.boxes[id])
	}
	w.mu.Unlock()

	var wg sync.WaitGroup
	workers := make([]*chaosWorker, chaosWorkers)
	for i := range workers {
		workers[i] = &chaosWorker{w: w, c: s.client(), round: round, n: i, killed: &killed, boxes: owned[i],
			rng: mrand.New(mrand.NewPCG(seed, uint64(i)))}
		wg.Go(workers[i].run)
	}
	time.Sleep(d)
	killed.Store(true)
	s.kill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard
		t.Fatalf("round %d: the load's workers did not stop after the kill", round)
	}
	calls := 0
	for _, wk := range workers {
		calls += wk.ops
	}
	t.Logf("round %d: %d calls, the server killed", round, calls)
}

// chaosWorker acts on its own sandboxes, one call at a time.
type chaosWorker struct {
	w      *chaosWorld
	c      *client.Client
	round  int
	n      int
	killed *atomic.Bool
	rng    *mrand.Rand
	boxes  []*chaosBox
	ops    int
}

func (k *chaosWorker) run() {
	for !k.killed.Load() {
		k.ops++
		k.step()
	}
}

// ack says whether a call was acknowledged and records how it ended: an
// error once the server is being killed cuts it short, one before is a
// test error.
func (k *chaosWorker) ack(what string, b *chaosBox, err error) bool {
	outcome := "ok"
	switch {
	case err != nil && k.killed.Load():
		outcome = "cut short"
	case err != nil:
		outcome = "failed"
		id := ""
		if b != nil {
			id = b.id
		}
		k.w.t.Errorf("round %d worker %d: %s %s with the server up: %v", k.round, k.n, what, id, err)
	}
	if b != nil {
		b.calls = append(b.calls, fmt.Sprintf("r%d %s %s", k.round, what, outcome))
	}
	return err == nil
}

// pick is one of the worker's sandboxes in one of states, or nil.
func (k *chaosWorker) pick(states ...api.SandboxState) *chaosBox {
	var in []*chaosBox
	for _, b := range k.boxes {
		if slices.Contains(states, b.state) {
			in = append(in, b)
		}
	}
	if len(in) == 0 {
		return nil
	}
	return in[k.rng.IntN(len(in))]
}

// step does one call, chosen at random among those the worker's sandboxes
// allow.
func (k *chaosWorker) step() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	up := []api.SandboxState{api.StateRunning, api.StatePaused}
	r := k.rng.IntN(100)
	switch {
	case r < 15 || k.pick(up...) == nil:
		if k.w.liveCount() < chaosMaxLive {
			k.create(ctx)
			return
		}
		k.move(ctx, k.pick(api.StateStopped), "start", api.StateRunning, k.c.StartSandbox)
		time.Sleep(20 * time.Millisecond) // little else to do
	case r < 38:
		k.write(ctx, k.pick(up...), true)
	case r < 58:
		k.write(ctx, k.pick(up...), false)
	case r < 66:
		k.startProcess(ctx, k.pick(api.StateRunning))
	case r < 74:
		k.readOutput(ctx, k.pick(api.StateRunning))
	case r < 82:
		if k.w.snapshots {
			k.snapshot(ctx, k.pick(api.StateRunning, api.StatePaused, api.StateStopped))
		}
	case r < 88:
		k.move(ctx, k.pick(api.StateRunning), "pause", api.StatePaused, k.c.PauseSandbox)
	case r < 91:
		k.move(ctx, k.pick(api.StatePaused), "resume", api.StateRunning, k.c.ResumeSandbox)
	case r < 93:
		k.move(ctx, k.pick(api.StateStopped), "start", api.StateRunning, k.c.StartSandbox)
	case r < 95:
		k.move(ctx, k.pick(up...), "stop", api.StateStopped, k.c.StopSandbox)
	default:
		if k.w.liveCount() > chaosWorkers {
			k.move(ctx, k.pick(api.StateRunning, api.StatePaused, api.StateStopped), "destroy", api.StateDestroyed, k.destroy)
		}
	}
}

func (k *chaosWorker) create(ctx context.Context) {
	req := api.CreateSandboxRequest{Labels: map[string]string{"chaos-round": strconv.Itoa(k.round)}}
	switch k.rng.IntN(3) {
	case 0:
		req.Template = chaosTemplate
	case 1:
		req.TimeoutS, req.OnExpiry = 3600, api.OnExpiryStop
	}
	sb, err := k.c.CreateSandbox(ctx, req)
	if !k.ack("create", nil, err) {
		return // made or not: the checks after the restart see which
	}
	if sb.State != api.StateRunning {
		k.w.t.Errorf("round %d: create answered %s in state %s", k.round, sb.ID, sb.State)
	}
	b := &chaosBox{id: sb.ID, state: api.StateRunning, files: map[string]string{}, procs: map[int]string{}}
	k.w.mu.Lock()
	k.w.boxes[b.id] = b
	k.w.mu.Unlock()
	k.boxes = append(k.boxes, b)
}

// token is a new file name of b's and what it is to hold.
func (k *chaosWorker) token(b *chaosBox, kind string) (name, content string) {
	b.n++
	kind = strings.ReplaceAll(kind, " ", "-")
	return fmt.Sprintf("chaos-%s-r%d-w%d-%d", kind, k.round, k.n, b.n), fmt.Sprintf("%s-%d-%s", b.id, b.n, randHex(8))
}

// write writes a new file into b, by a command (exec) or through the
// file API, and records it once acknowledged.
func (k *chaosWorker) write(ctx context.Context, b *chaosBox, exec bool) {
	if b == nil {
		return
	}
	if b.state == api.StatePaused {
		b.maybe = api.StateRunning // a call resumes a paused sandbox
	}
	var err error
	var res *api.ExecResult
	what := "write file"
	if exec {
		what = "exec"
	}
	name, content := k.token(b, what)
	if exec {
		res, err = k.c.Exec(ctx, b.id, api.ExecRequest{Cmd: []string{"sh", "-c", "echo " + content + " > " + name}})
		content += "\n"
	} else {
		_, err = k.c.WriteFile(ctx, b.id, name, 0, strings.NewReader(content))
	}
	if !k.ack(what, b, err) {
		return
	}
	b.state, b.maybe = api.StateRunning, ""
	if res != nil && res.ExitCode != 0 {
		k.w.t.Errorf("round %d: exec in %s exited %d: %q", k.round, b.id, res.ExitCode, res.Stderr)
		return
	}
	b.files[name] = content
}

func (k *chaosWorker) startProcess(ctx context.Context, b *chaosBox) {
	if b == nil || len(b.procs) >= chaosMaxProcs {
		return
	}
	p, err := k.c.StartProcess(ctx, b.id, api.ProcessRequest{
		Cmd: []string{"sh", "-c", `i=0; while :; do echo tick$i; i=$((i+1)); sleep 0.1; done`},
		Tag: "chaos",
	})
	if !k.ack("start process", b, err) {
		return
	}
	b.procs[p.PID] = ""
}

// readOutput reads what one of b's processes has written so far.
func (k *chaosWorker) readOutput(ctx context.Context, b *chaosBox) {
	if b == nil || len(b.procs) == 0 {
		return
	}
	pids := slices.Sorted(maps.Keys(b.procs))
	pid := pids[k.rng.IntN(len(pids))]
	out, err := processOutput(ctx, k.c, b.id, pid)
	if !k.ack("read output", b, err) {
		return
	}
	if !strings.HasPrefix(out, b.procs[pid]) {
		k.w.t.Errorf("round %d: output of %s/%d %q does not go on from %q", k.round, b.id, pid, out, b.procs[pid])
	}
	b.procs[pid] = out
}

func (k *chaosWorker) snapshot(ctx context.Context, b *chaosBox) {
	if b == nil {
		return
	}
	files := maps.Clone(b.files)
	sn, err := k.c.CreateSnapshot(ctx, b.id, api.CreateSnapshotRequest{Name: "chaos"})
	if !k.ack("snapshot", b, err) {
		return
	}
	k.w.mu.Lock()
	k.w.snaps[sn.ID] = &chaosSnap{id: sn.ID, sandbox: b.id, files: files}
	k.w.mu.Unlock()
}

// move makes a lifecycle call (verb) on b that, acknowledged, leaves it
// to; cut short, it may have.
func (k *chaosWorker) move(ctx context.Context, b *chaosBox, verb string, to api.SandboxState, call func(context.Context, string) (*api.Sandbox, error)) {
	if b == nil {
		return
	}
	b.maybe = to
	if to == api.StateStopped || to == api.StateDestroyed {
		clear(b.procs) // one cut short may have ended them
	}
	_, err := call(ctx, b.id)
	if client.Code(err) == "pause_failed" {
		// A process that would not freeze in time: the sandbox was
		// thawed again and runs on, as the API says.
		k.w.t.Logf("round %d: pause %s: %v", k.round, b.id, err)
		b.calls = append(b.calls, fmt.Sprintf("r%d pause refused", k.round))
		b.maybe = ""
		return
	}
	if k.ack(verb, b, err) {
		b.state, b.maybe = to, ""
	}
}

func (k *chaosWorker) destroy(ctx context.Context, id string) (*api.Sandbox, error) {
	return nil, k.c.DeleteSandbox(ctx, id)
}

// check runs after the restart that follows round's kill.
func (w *chaosWorld) check(s *server, round int, rng *mrand.Rand) {
	t := w.t
	c := s.client()
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
			w.boxes[sb.ID] = &chaosBox{id: sb.ID, state: api.StateRunning, files: map[string]string{}, procs: map[int]string{}}
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
		if sb.State != b.state && (b.maybe == "" || sb.State != b.maybe) {
			t.Errorf("%s: sandbox %s is %s (%s); acknowledged %s, maybe %q; calls %q", where, id, sb.State, sb.Error, b.state, b.maybe, b.calls)
		}
		if sb.State != api.StateRunning && sb.State != api.StatePaused {
			clear(b.procs) // they went with its agent
		}
		b.state, b.maybe = sb.State, ""
	}

	states, files, procs := map[api.SandboxState]int{}, 0, 0
	for _, b := range w.boxes {
		states[b.state]++
		files += len(b.files)
		procs += len(b.procs)
	}
	t.Logf("%s: sandboxes %v, %d files, %d processes, %d snapshots acknowledged", where, states, files, procs, len(w.snaps))

	// The records and what is outside the store agree.
	w.checkLeftovers(s, where, listed)

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

// checkLeftovers compares what the store lists with what is outside it:
// the driver's sandbox directories, the snapshots' files, the cgroups and
// the agents' processes. listed are the sandboxes as listed (empty: all
// destroyed).
func (w *chaosWorld) checkLeftovers(s *server, where string, listed map[string]api.Sandbox) {
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

	nsDir := filepath.Join(s.dataDir, "sandboxes", "namespace")
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
	// is one whose directory is there.
	regs, _ := filepath.Glob(filepath.Join(hostids.Registry, "*"))
	for _, r := range regs {
		b, err := os.ReadFile(r)
		if owner := string(b); err == nil && strings.HasPrefix(owner, nsDir+"/") && !dirExists(owner) {
			t.Errorf("%s: host uid range %s is still registered to %s, which is gone", where, filepath.Base(r), owner)
		}
	}

	// The trash empties in the background.
	waitUntil(t, where+": the driver's trash emptied", func() bool {
		ents, _ := os.ReadDir(filepath.Join(nsDir, ".trash"))
		return len(ents) == 0
	})

	if ents, err := os.ReadDir(filepath.Join(s.dataDir, "snapshots")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, err := s.client().ListSnapshots(ctx, "")
		if err != nil {
			t.Fatalf("%s: list snapshots: %v", where, err)
		}
		recorded := map[string]bool{}
		for _, sn := range list.Snapshots {
			recorded[sn.ID] = true
		}
		onDisk := map[string]bool{}
		for _, e := range ents {
			onDisk[e.Name()] = true // a copy a crash cut short, too
		}
		diff(t, where, "snapshot directories", onDisk, recorded)
	}

	cgroups := map[string]bool{}
	for _, root := range cgroupRoots(w.parent) {
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if e.IsDir() && ids.Valid(e.Name()) {
				cgroups[e.Name()] = true
			}
		}
	}
	diff(t, where, "sandbox cgroups", cgroups, kept)

	diff(t, where, "sandboxes with processes", sandboxProcesses(w.parent), agents)
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

// cgroupRoots are parent's directories: one per v1 controller, or the
// one of the unified hierarchy.
func cgroupRoots(parent string) []string {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent))
	if p := filepath.Join("/sys/fs/cgroup", parent); dirExists(p) {
		roots = append(roots, p)
	}
	return roots
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// cleanupHost is the test's last cleanup. Had a server died with
// sandboxes (a failed run), their processes, frozen ones too, would
// outlive the test, and once their uid ranges went back to the host-wide
// registry the next owner's teardown would try to kill them. It thaws and
// SIGKILLs whatever is left under parent or works in dataDir (a warm
// sandbox's agent has no cgroup yet), removes parent's groups and the
// registry's ranges of dataDir.
func cleanupHost(t *testing.T, parent, dataDir string) {
	for deadline := time.Now().Add(time.Minute); ; {
		var left []int
		for _, g := range groupDirs(parent) {
			writeIfThere(filepath.Join(g, "freezer.state"), "THAWED") // v1
			writeIfThere(filepath.Join(g, "cgroup.freeze"), "0")      // v2
			b, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				left = append(left, pid)
			}
		}
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && strings.HasPrefix(cwd, dataDir+"/") {
				pid, _ := strconv.Atoi(filepath.Base(p))
				left = append(left, pid)
			}
		}
		slices.Sort(left)
		if left = slices.Compact(left); len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: processes %v survive SIGKILL", left)
			break
		}
		if !t.Failed() {
			// The last server destroyed everything and stopped.
			t.Errorf("cleanup: processes %v outlived the last server", left)
		}
		t.Logf("cleanup: killing processes %v the test's servers left", left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dirs := groupDirs(parent)
	for i := len(dirs) - 1; i >= 0; i-- { // children first
		_ = os.Remove(dirs[i])
	}
	regs, _ := filepath.Glob(filepath.Join(hostids.Registry, "*"))
	for _, r := range regs {
		if b, err := os.ReadFile(r); err == nil && strings.HasPrefix(string(b), dataDir+"/") {
			_ = os.Remove(r)
		}
	}
}

// groupDirs are the directories of parent's cgroups in every hierarchy,
// each before those below it.
func groupDirs(parent string) []string {
	var dirs []string
	for _, root := range cgroupRoots(parent) {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	return dirs
}

// writeIfThere writes v to the existing file p (a cgroup's control file).
func writeIfThere(p, v string) {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(v)
	_ = f.Close()
}

// sandboxProcesses are the sandboxes under parent that have a process:
// its agent in <parent>/<id>, its commands below.
func sandboxProcesses(parent string) map[string]bool {
	out := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cg, err := os.ReadFile(filepath.Join(p, "cgroup"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(cg), "\n") {
			// hierarchy:controllers:path; on v1 the pids controller, else
			// the unified one.
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || (f[1] != "pids" && f[1] != "") {
				continue
			}
			_, rest, ok := strings.Cut(f[2], "/"+parent+"/")
			if id, _, _ := strings.Cut(rest, "/"); ok && ids.Valid(id) {
				out[id] = true
			}
		}
	}
	return out
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

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func names(ents []os.DirEntry) []string {
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
