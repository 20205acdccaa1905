package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// chaosRand is a chaos test's source of randomness, seeded from
// chaosSeedEnv when set, else from the clock; it logs its seed.
func chaosRand(t *testing.T) *mrand.Rand {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, chaosSeedEnv, seed)
	return mrand.New(mrand.NewPCG(seed, 0))
}

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
	id   string
	node string // the node that runs it ("": the one server)
	// state is the state the last acknowledged call left it in; maybe,
	// those the calls a kill cut short since would have (in a fleet,
	// every call to a dead node's sandbox is).
	state api.SandboxState
	maybe []api.SandboxState
	files map[string]string // path → content, each write acknowledged
	procs map[int]string    // counter process → the output seen of it
	n     int               // names files
	calls []string          // the calls made on it and how each ended, for a failure's story
}

// may notes that a call under way may leave b in state.
func (b *chaosBox) may(state api.SandboxState) { b.maybe = append(b.maybe, state) }

// is reports whether b may be in state: the acknowledged one, or one a
// call cut short may have left it in.
func (b *chaosBox) is(state api.SandboxState) bool {
	return state == b.state || slices.Contains(b.maybe, state)
}

// settle notes that an acknowledged call left b in state.
func (b *chaosBox) settle(state api.SandboxState) { b.state, b.maybe = state, nil }

func (b *chaosBox) live() bool {
	return b.state != api.StateDestroyed && b.state != api.StateFailed
}

// chaosSnap is an acknowledged snapshot and the files its sandbox had
// been acknowledged to hold when it was taken.
type chaosSnap struct {
	id, sandbox string
	files       map[string]string
}

// chaosPlace is where one node keeps its sandboxes: its data directory
// and its cgroup parent.
type chaosPlace struct {
	node            string // "": the one server's, every sandbox
	dataDir, parent string
}

// chaosKill is a round's kill of node ("": of the one server). Once it
// happened, a call through that node, or to a sandbox it runs, may be
// cut short, and so may a create begun before it (it may have been
// placed there); every other call is answered.
type chaosKill struct {
	node     string
	happened atomic.Bool
}

// cuts reports whether a call through via on a sandbox owner runs ("":
// a create), begun after the kill when late, may have been cut short.
func (c *chaosKill) cuts(via, owner string, late bool) bool {
	switch {
	case !c.happened.Load():
		return false
	case c.node == "" || via == c.node || owner == c.node:
		return true
	}
	return owner == "" && !late
}

// chaosVia is a node the load's calls go through.
type chaosVia struct {
	node string
	c    *client.Client
}

// chaosWorld is everything acknowledged so far.
type chaosWorld struct {
	t         *testing.T
	places    []chaosPlace
	snapshots bool   // the driver here can take them, and the load takes them
	template  string // the image template some creates ask for ("": none)

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
	rng := chaosRand(t)

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

	w := &chaosWorld{t: t, places: []chaosPlace{{dataDir: dataDir, parent: parent}}, template: chaosTemplate,
		boxes: map[string]*chaosBox{}, snaps: map[string]*chaosSnap{}}
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
		w.runLoad(round, rng.Uint64(), []chaosVia{{c: s.client()}}, &chaosKill{}, s.kill, load, 0)
		s = start()
		w.check(s.client(), round, rng)
	}

	// The end: everything destroyed leaves nothing behind.
	c := s.client()
	w.destroyAll(c)
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

// runLoad runs the workers through vias for about d, then kills the
// node kill names while they are at work (killNode), lets them go on
// through the other nodes for after, and waits until every worker has
// stopped.
func (w *chaosWorld) runLoad(round int, seed uint64, vias []chaosVia, kill *chaosKill, killNode func(), d, after time.Duration) {
	t := w.t
	var stop atomic.Bool
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
		workers[i] = &chaosWorker{w: w, vias: vias, round: round, n: i, kill: kill, stop: &stop, boxes: owned[i],
			rng: mrand.New(mrand.NewPCG(seed, uint64(i)))}
		wg.Go(workers[i].run)
	}
	time.Sleep(d)
	kill.happened.Store(true)
	killNode()
	time.Sleep(after)
	stop.Store(true)
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
	killed := "the server"
	if kill.node != "" {
		killed = "node " + kill.node
	}
	t.Logf("round %d: %d calls, %s killed", round, calls, killed)
}

// chaosWorker acts on its own sandboxes, one call at a time, each
// through one of vias.
type chaosWorker struct {
	w     *chaosWorld
	vias  []chaosVia
	round int
	n     int
	kill  *chaosKill
	stop  *atomic.Bool
	rng   *mrand.Rand
	boxes []*chaosBox
	ops   int

	// The call in progress: the node it goes through and its client,
	// and whether it began after the kill.
	via  string
	c    *client.Client
	late bool
}

func (k *chaosWorker) run() {
	for !k.stop.Load() && !(k.kill.node == "" && k.kill.happened.Load()) {
		k.ops++
		k.through()
		k.step()
	}
}

// through chooses the node the next call goes through: any of vias,
// once the kill happened any but the node killed.
func (k *chaosWorker) through() {
	k.late = k.kill.happened.Load()
	up := k.vias
	if k.late {
		up = slices.DeleteFunc(slices.Clone(up), func(v chaosVia) bool { return v.node == k.kill.node })
	}
	v := up[k.rng.IntN(len(up))]
	k.via, k.c = v.node, v.c
}

// ack says whether a call was acknowledged and records how it ended: an
// error the kill may explain cuts it short (chaosKill.cuts), any other
// is a test error.
func (k *chaosWorker) ack(what string, b *chaosBox, err error) bool {
	owner := ""
	if b != nil {
		owner = b.node
	}
	outcome := "ok"
	switch {
	case err != nil && k.kill.cuts(k.via, owner, k.late):
		outcome = "cut short"
	case err != nil:
		outcome = "failed"
		id := ""
		if b != nil {
			id = b.id
		}
		k.w.t.Errorf("round %d worker %d: %s %s through %q with its node up: %v", k.round, k.n, what, id, k.via, err)
	}
	if b != nil {
		b.calls = append(b.calls, fmt.Sprintf("r%d %s via %q %s", k.round, what, k.via, outcome))
	}
	return err == nil
}

// pick is one of the worker's sandboxes in one of states, or nil. A
// sandbox a call cut short may have moved (in a fleet, a destroy through
// the node killed may have reached the survivor that runs it) is left
// alone until the checks after the restart say what it is.
func (k *chaosWorker) pick(states ...api.SandboxState) *chaosBox {
	var in []*chaosBox
	for _, b := range k.boxes {
		if len(b.maybe) == 0 && slices.Contains(states, b.state) {
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
		req.Template = k.w.template
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
	b := &chaosBox{id: sb.ID, node: sb.Node, state: api.StateRunning, files: map[string]string{}, procs: map[int]string{}}
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
		b.may(api.StateRunning) // a call resumes a paused sandbox
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
	b.settle(api.StateRunning)
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
	before := len(b.maybe)
	b.may(to)
	if to == api.StateStopped || to == api.StateDestroyed {
		clear(b.procs) // one cut short may have ended them
	}
	_, err := call(ctx, b.id)
	if client.Code(err) == "pause_failed" {
		// A process that would not freeze in time: the sandbox was
		// thawed again and runs on, as the API says.
		k.w.t.Logf("round %d: pause %s: %v", k.round, b.id, err)
		b.calls = append(b.calls, fmt.Sprintf("r%d pause refused", k.round))
		b.maybe = b.maybe[:before]
		return
	}
	if k.ack(verb, b, err) {
		b.settle(to)
	}
}

func (k *chaosWorker) destroy(ctx context.Context, id string) (*api.Sandbox, error) {
	return nil, k.c.DeleteSandbox(ctx, id)
}

// destroyAll destroys every sandbox through c and checks that nothing of
// them is left.
func (w *chaosWorld) destroyAll(c *client.Client) {
	ctx := w.t.Context()
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			w.t.Fatal(err)
		}
		if sb.State != api.StateDestroyed {
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				w.t.Errorf("destroy %s (%s): %v", sb.ID, sb.State, err)
			}
		}
	}
	w.checkLeftovers(c, "at the end", map[string]api.Sandbox{})
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
