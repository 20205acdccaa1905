package sandbox

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// waitEvent polls the sandbox's events until one of typ matches ok.
func (f *liveFixture) waitEvent(t *testing.T, id, typ string, ok func(store.Event) bool) store.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: id, Types: []string{typ}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event came; logs:\n%s", typ, f.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restart is a new control plane over the same store and driver, as
// after a restart: it has recovered when restart returns.
func (f *liveFixture) restart(t *testing.T) *Service {
	t.Helper()
	again, err := New(f.svc.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)
	if err := again.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return again
}

func pidOf(e store.Event) int {
	pid, _ := e.Data["pid"].(float64)
	return int(pid)
}

// TestProcessesThroughTheDoor: a background process's life is recorded as
// events, its input and output pass the door, and a restarted control
// plane follows the processes it finds running and reports those that
// ended while it was away.
func TestProcessesThroughTheDoor(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.StartProcess(f.ctx, sb.ID, api.ProcessRequest{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a process with no command = %v; want invalid", err)
	}
	p, err := f.svc.StartProcess(f.ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "read x; echo got $x; exit 3"}, Tag: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.WriteStdin(f.ctx, sb.ID, p.PID, strings.NewReader("in\n"), true); err != nil {
		t.Fatal(err)
	}
	exited := f.waitEvent(t, sb.ID, api.EventProcessExited, func(e store.Event) bool { return pidOf(e) == p.PID })
	if exited.Data["exit_code"] != float64(3) || exited.Data["tag"] != "t" {
		t.Fatalf("exited event %+v", exited.Data)
	}
	out, err := f.svc.ProcessOutput(f.ctx, sb.ID, p.PID, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		ev, err := out.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Data...)
	}
	out.Close()
	if string(got) != "got in\n" {
		t.Fatalf("output %q", got)
	}

	long, err := f.svc.StartProcess(f.ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	short, err := f.svc.StartProcess(f.ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	// The control plane goes away; while none runs, one process ends.
	f.svc.Close()
	if _, err := f.svc.SignalProcess(f.ctx, sb.ID, short.PID, api.SignalRequest{Signal: "TERM"}); err != nil {
		t.Fatal(err)
	}
	if p, err := f.svc.WaitProcess(f.ctx, sb.ID, short.PID, 5*time.Second); err != nil || p.Running {
		t.Fatalf("the signalled process: %+v, %v", p, err)
	}
	again := f.restart(t)
	if got := f.state(t, sb.ID); got != api.StateRunning {
		t.Fatalf("after recovery the sandbox is %s; want running (its agent still runs)", got)
	}
	f.waitEvent(t, sb.ID, api.EventProcessExited, func(e store.Event) bool { return pidOf(e) == short.PID })
	list, err := again.ListProcesses(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Processes, func(p api.Process) bool { return p.PID == long.PID && p.Running }) {
		t.Fatalf("processes after recovery: %+v", list.Processes)
	}
	if _, err := again.SignalProcess(f.ctx, sb.ID, long.PID, api.SignalRequest{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	e := f.waitEvent(t, sb.ID, api.EventProcessExited, func(e store.Event) bool { return pidOf(e) == long.PID })
	if e.Data["signal"] != "SIGKILL" {
		t.Fatalf("exit of the followed process: %+v", e.Data)
	}
	// One exited event each: recovery did not repeat the ones on record.
	evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: sb.ID, Types: []string{api.EventProcessExited}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d process.exited events; want 3", len(evs))
	}
}

// TestNetworkPolicy: the egress policy changes while a sandbox lives,
// is checked, is an event, and cannot change once it is destroyed.
func TestNetworkPolicy(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	n, err := f.svc.Network(f.ctx, sb.ID)
	if err != nil || n.Policy.Egress != api.EgressPublic {
		t.Fatalf("default policy = %+v, %v", n, err)
	}
	if _, err := f.svc.SetNetwork(f.ctx, sb.ID, api.NetworkPolicy{Egress: "sometimes"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a policy of no kind = %v; want invalid", err)
	}
	n, err = f.svc.SetNetwork(f.ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"*.example.com:443"}})
	if err != nil || n.Policy.Egress != api.EgressAllowlist || !slices.Equal(n.Policy.Allow, []string{"*.example.com:443"}) {
		t.Fatalf("allowlist = %+v, %v", n, err)
	}
	f.waitEvent(t, sb.ID, api.EventNetworkChanged, func(e store.Event) bool { return e.Data["egress"] == api.EgressAllowlist })
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetNetwork(f.ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressNone}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("policy of a destroyed sandbox = %v; want a conflict", err)
	}
}

// TestInterruptedDestroy: a destroy a crash cut short is finished by the
// next control plane.
func TestInterruptedDestroy(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := store.Transition(f.ctx, f.st, sb.ID, []api.SandboxState{api.StateRunning}, api.StateDestroying, nil); err != nil {
		t.Fatal(err)
	}
	f.restart(t)
	if got := f.state(t, sb.ID); got != api.StateDestroyed {
		t.Fatalf("state %s; want destroyed", got)
	}
	if live := f.drv.Live(); len(live) != 0 {
		t.Fatalf("agents still running: %v", live)
	}
}
