package events

import (
	"context"
	"testing"

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
	a1 := n.Subscribe("a")
	a2 := n.Subscribe("a")
	b := n.Subscribe("b")
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

func TestNilNotifier(t *testing.T) {
	var n *Notifier
	s := n.Subscribe("a")
	n.Notify("a")
	if s.Wake() != nil || n.Streams("a") != 0 {
		t.Fatal("a nil notifier's subscription can be woken")
	}
	s.Close()
}

// TestStoreChanged: appends the store tells wake their tenant's streams;
// a resync wakes every stream.
func TestStoreChanged(t *testing.T) {
	l := New(nil, Config{})
	a, b := l.Notifier().Subscribe("a"), l.Notifier().Subscribe("b")
	defer a.Close()
	defer b.Close()
	l.StoreChanged(context.Background(), store.Change{Kind: store.ChangeEvents, TenantID: "a"})
	if !woken(a) || woken(b) {
		t.Fatal("an append told to a woke not a's stream alone")
	}
	l.StoreChanged(context.Background(), store.Change{Kind: store.ChangeSandbox, TenantID: "b", SandboxID: "s"})
	if woken(b) {
		t.Fatal("a sandbox's record told woke an event stream")
	}
	l.StoreChanged(context.Background(), store.Change{Kind: store.ChangeResync})
	if !woken(a) || !woken(b) {
		t.Fatal("a resync left a stream asleep")
	}
}
