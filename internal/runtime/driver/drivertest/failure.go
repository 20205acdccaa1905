package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

func testFailedCreate(t *testing.T, s Suite) {
	d := s.New(t)
	sp := spec(api.Limits{})
	sp.Template = "no-such-template"
	if _, err := d.Create(context.Background(), sp); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("Create with an unknown template: %v, want invalid", err)
	}
	assertClean(t, s, sp.SandboxID)

	sp = spec(api.Limits{})
	sp.Cwd = "../../../../outside"
	if _, err := d.Create(context.Background(), sp); err == nil {
		t.Fatal("Create with a cwd outside the sandbox succeeded")
	}
	assertClean(t, s, sp.SandboxID)

	// A create whose context ends early leaves nothing behind either.
	sp = spec(api.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
	defer cancel()
	if h, err := d.Create(ctx, sp); err == nil {
		_ = d.Destroy(context.Background(), h)
	}
	assertClean(t, s, sp.SandboxID)
}

func testRecover(t *testing.T, s Suite) {
	d := s.New(t)
	sb := create(t, d, spec(api.Limits{}))
	sh(t, sb, "echo before > state.txt")
	// A second driver over the same host state: a restarted control plane.
	d2 := s.New(t)
	st, err := d2.Recover(context.Background(), sb.handle)
	if err != nil || st.State != driver.Running {
		t.Fatalf("Recover = %+v, %v; want running", st, err)
	}
	if got := sh(t, sb, "cat state.txt"); got != "before\n" {
		t.Fatalf("after Recover: %q", got)
	}
}

func testSweep(t *testing.T, s Suite) {
	d := s.New(t)
	sw, ok := d.(driver.Sweeper)
	if !ok {
		t.Skip("driver has no Sweeper")
	}
	keep := create(t, d, spec(api.Limits{}))
	orphan := create(t, d, spec(api.Limits{}))
	sh(t, orphan, "sleep 300 >/dev/null 2>&1 &")
	removed, err := sw.Sweep(context.Background(), func(id string) bool { return id == keep.id })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range removed {
		if id == keep.id {
			t.Fatalf("Sweep removed a known sandbox")
		}
		found = found || id == orphan.id
	}
	if !found {
		t.Fatalf("Sweep removed %v, not the orphan %s", removed, orphan.id)
	}
	assertClean(t, s, orphan.id)
	if got := sh(t, keep, "echo ok"); got != "ok\n" {
		t.Fatalf("known sandbox after Sweep: %q", got)
	}
}

func testCancelledDestroy(t *testing.T, s Suite) {
	d := s.New(t)
	sb := create(t, d, spec(api.Limits{}))
	// Processes that make a teardown hard: stopped, ignoring SIGTERM, in a
	// session of their own.
	sh(t, sb, "sleep 300 >/dev/null 2>&1 & kill -STOP $!; "+
		"(trap '' TERM HUP INT; exec sleep 301) >/dev/null 2>&1 & "+
		"setsid sleep 302 >/dev/null 2>&1 &")
	// A process is not seen while it execs (its environ cannot be read
	// then), so wait for all three.
	for deadline := time.Now().Add(5 * time.Second); len(processesOf(sb.id)) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the sandbox running before Destroy, want 3", len(processesOf(sb.id)))
		}
	}
	// The caller must give teardown a context that outlives the request;
	// a driver still finishes with one that has no deadline at all.
	if err := d.Destroy(context.WithoutCancel(context.Background()), sb.handle); err != nil {
		t.Fatal(err)
	}
	assertClean(t, s, sb.id)
}
