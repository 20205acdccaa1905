package events

import (
	"errors"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
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
