package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
)

// observation is one report to an Observer: the driver or the op, and
// the error (nil: ok).
type observation struct {
	name string
	err  error
}

// observations is an Observer that keeps what it is told.
type observations struct {
	mu                    sync.Mutex
	creates, execs, calls []observation
}

func (o *observations) ObserveCreate(driver string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.creates = append(o.creates, observation{driver, err})
}

func (o *observations) ObserveExec(driver string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.execs = append(o.execs, observation{driver, err})
}

func (o *observations) ObserveCall(op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observation{op, err})
}

// take returns what *list holds and empties it.
func (o *observations) take(list *[]observation) []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := *list
	*list = nil
	return out
}

// wantObserved fails t unless got is one report of name whose error is
// of class (nil: no error).
func wantObserved(t *testing.T, what string, got []observation, name string, class error) {
	t.Helper()
	if len(got) != 1 || got[0].name != name || (class == nil) != (got[0].err == nil) || (class != nil && !errors.Is(got[0].err, class)) {
		t.Errorf("%s observed %+v; want one of %s with error class %v", what, got, name, class)
	}
}

// TestObserver: creates, commands and calls through the door are each
// reported once, by driver or op, with how they ended.
func TestObserver(t *testing.T) {
	obs := &observations{}
	f := newLiveFixture(t, func(c *Config) { c.Observer = obs })
	drv := f.drv.Name()

	sb := f.create(t)
	wantObserved(t, "a create", obs.take(&obs.creates), drv, nil)

	f.drv.Hook(fake.OpCreate, func(context.Context, string) error { return errdefs.Unavailable("broken", "broken") })
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{}); err == nil {
		t.Fatal("a create the driver fails succeeded")
	}
	f.drv.Hook(fake.OpCreate, nil)
	wantObserved(t, "a failed create", obs.take(&obs.creates), drv, errdefs.ErrUnavailable)
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Driver: "nonesuch"}); err == nil {
		t.Fatal("a create on no driver succeeded")
	}
	if got := obs.take(&obs.creates); len(got) != 0 {
		t.Errorf("a create that chose no driver observed %+v; want none", got)
	}

	if res, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "exit 3"}}); err != nil || res.ExitCode != 3 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	wantObserved(t, "a command that exited 3", obs.take(&obs.execs), drv, nil)
	wantObserved(t, "its call", obs.take(&obs.calls), "exec", nil)

	st, err := f.svc.ExecStream(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo up; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := st.Next(); err != nil || string(ev.Data) != "up\n" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	st.Close()
	st.Close()
	wantObserved(t, "a stream closed before its exit", obs.take(&obs.execs), drv, context.Canceled)
	wantObserved(t, "its call, which the close ends", obs.take(&obs.calls), "exec", nil)

	if _, err := f.svc.ListFiles(f.ctx, sb.ID, "nonesuch"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("list a missing directory = %v; want not found", err)
	}
	wantObserved(t, "a call the agent refused", obs.take(&obs.calls), "files.list", errdefs.ErrNotFound)
}
