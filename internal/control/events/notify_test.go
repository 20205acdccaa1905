package sandbox

import (
	"context"
	"errors"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// woken reports whether sub has a wake waiting, taking it.
func woken(sub *Subscription) bool {
	select {
	case <-sub.Wake():
		return true
	default:
		return false
	}
}

func TestNotifierWakesOnlyTheTenant(t *testing.T) {
	n := NewNotifier()
	a1, err := n.Subscribe("a", 0)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := n.Subscribe("a", 0)
	b, _ := n.Subscribe("b", 0)
	n.Notify("a")
	n.Notify("a") // coalesces with the first
	if !woken(a1) || !woken(a2) {
		t.Fatal("a's streams were not woken")
	}
	if woken(a1) || woken(a2) {
		t.Fatal("two notifies woke a stream twice; they should coalesce")
	}
	if woken(b) {
		t.Fatal("b's stream was woken by a's event")
	}
	n.Notify("nobody") // no streams: nothing to do
	a1.Close()
	a1.Close()
	if got := n.Streams("a"); got != 1 {
		t.Fatalf("a holds %d streams after one closed twice, want 1", got)
	}
	a2.Close()
	b.Close()
	if n.Streams("a") != 0 || n.Streams("b") != 0 || len(n.subs) != 0 {
		t.Fatalf("streams left after every Close: %v", n.subs)
	}
}

func TestNotifierLimit(t *testing.T) {
	n := NewNotifier()
	var subs []*Subscription
	for range 3 {
		s, err := n.Subscribe("a", 3)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	_, err := n.Subscribe("a", 3)
	if !errors.Is(err, ErrTooManyStreams) || !errors.Is(err, errdefs.ErrRateLimited) {
		t.Fatalf("fourth stream: %v, want ErrTooManyStreams", err)
	}
	if _, code, _ := errdefs.HTTPStatus(err); code != "too_many_streams" {
		t.Fatalf("code %q, want too_many_streams", code)
	}
	if s, err := n.Subscribe("b", 3); err != nil { // other tenants have their own
		t.Fatal(err)
	} else {
		s.Close()
	}
	subs[0].Close()
	if _, err := n.Subscribe("a", 3); err != nil {
		t.Fatalf("after a close: %v", err)
	}
}

func TestNilNotifier(t *testing.T) {
	var n *Notifier
	s, err := n.Subscribe("a", 1)
	if err != nil {
		t.Fatal(err)
	}
	n.Notify("a")
	if s.Wake() != nil || n.Streams("a") != 0 {
		t.Fatal("a nil notifier's subscription can be woken")
	}
	s.Close()
}

// TestServiceEventsWakeStreams: every event the service records wakes its
// tenant's streams, and only after it is stored.
func TestServiceEventsWakeStreams(t *testing.T) {
	f := newFixture(t, nil)
	sub, err := f.svc.events.Notifier().Subscribe(f.tenant, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	other, _ := f.svc.events.Notifier().Subscribe(ids.New(), 0)
	defer other.Close()

	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !woken(sub) {
		t.Fatal("create did not wake the tenant's stream")
	}
	if evs := f.events(t, sb.ID); len(evs) != 1 {
		t.Fatalf("woken before the event was stored: %v", types(evs))
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if !woken(sub) {
		t.Fatal("destroy did not wake the tenant's stream")
	}
	if woken(other) {
		t.Fatal("another tenant's stream was woken")
	}

	// AppendEvent, for events recorded outside the lifecycle.
	e := &store.Event{SandboxID: sb.ID, Type: api.EventProcessExited, Message: "process 7 exited with code 0",
		Data: map[string]any{"pid": 7, "exit_code": 0}}
	if err := f.svc.events.AppendEvent(f.ctx, e); err != nil {
		t.Fatal(err)
	}
	if w := woken(sub); e.ID == "" || e.TenantID != f.tenant || !w {
		t.Fatalf("AppendEvent stored %+v, woke the stream: %v", e, w)
	}

	// A failed append wakes nobody.
	bad := &store.Event{SandboxID: "no-such-sandbox", Type: api.EventProcessExited, Message: "x"}
	if err := f.svc.events.AppendEvent(tenancy.With(context.Background(), tenancy.Principal{TenantID: f.tenant}), bad); err == nil {
		t.Fatal("append about an unknown sandbox succeeded")
	}
	if woken(sub) {
		t.Fatal("a failed append woke the stream")
	}
}
