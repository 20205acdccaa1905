package gateway

import (
	"testing"
	"time"
)

// TestLimiter: the bucket refills at the provider's rate up to its burst,
// calls in flight are bounded apart from it, and buckets are per sandbox.
func TestLimiter(t *testing.T) {
	p := &Provider{Name: "p", RequestsPerMinute: 60, Burst: 3, MaxConcurrent: 2}
	var l limiter
	t0 := time.Unix(1000, 0)
	var releases []func()
	for i := range 2 {
		rel, _, ok := l.take("a", p, t0)
		if !ok {
			t.Fatalf("call %d refused", i)
		}
		releases = append(releases, rel)
	}
	if _, wait, ok := l.take("a", p, t0); ok || wait != 0 {
		t.Fatalf("third call in flight: ok %v wait %v, want refused for calls in flight", ok, wait)
	}
	releases[0]()
	rel, _, ok := l.take("a", p, t0)
	if !ok {
		t.Fatal("a call after one ended was refused")
	}
	rel()
	releases[1]()
	// Three taken from a burst of three: the next token comes in 1 s.
	_, wait, ok := l.take("a", p, t0.Add(250*time.Millisecond))
	if ok || wait != 750*time.Millisecond {
		t.Fatalf("empty bucket: ok %v wait %v, want a 750ms wait", ok, wait)
	}
	if rel, _, ok := l.take("b", p, t0); !ok {
		t.Fatal("another sandbox shares the bucket")
	} else {
		rel()
	}
	if rel, _, ok := l.take("a", p, t0.Add(time.Second)); !ok {
		t.Fatal("no token after a second at 60 a minute")
	} else {
		rel()
	}
	// Idle long enough, the bucket holds the burst and no more.
	for i := range 4 {
		rel, _, ok := l.take("a", p, t0.Add(time.Hour))
		if ok != (i < 3) {
			t.Fatalf("after an hour, call %d: ok %v", i, ok)
		}
		if ok {
			rel()
		}
	}
	l.prune(t0.Add(2 * time.Hour))
	if len(l.m) != 0 {
		t.Errorf("%d idle buckets left after pruning", len(l.m))
	}
}
