package events

import "testing"

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
