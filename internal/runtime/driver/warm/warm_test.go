package warm

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// counter makes and discards numbered items, each in its directory.
type counter struct {
	mu        sync.Mutex
	made      int
	discarded []int
}

func (c *counter) make(dir string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	return c.made, os.WriteFile(filepath.Join(dir, "item"), nil, 0o600)
}

func (c *counter) discard(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.discarded = append(c.discarded, n)
}

func (c *counter) counts() (made, discarded int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made, len(c.discarded)
}

// TestPoolRetiresOldItems: items older than the pool's age are replaced,
// so the pool stays full of young ones, and Close discards the rest.
func TestPoolRetiresOldItems(t *testing.T) {
	c := &counter{}
	p := New(t.TempDir(), 0o700, 2, c.make, c.discard, slog.New(slog.DiscardHandler))
	p.maxAge = 100 * time.Millisecond
	if _, ok := p.Take(); ok {
		t.Fatal("a pool had an item before it started filling")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, discarded := c.counts(); discarded >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no item was retired")
		}
	}
	it, ok := p.Take()
	if !ok {
		t.Fatal("the pool was empty after retiring")
	}
	c.mu.Lock()
	for _, d := range c.discarded {
		if d == it {
			t.Errorf("item %d was taken after it was discarded", it)
		}
	}
	c.mu.Unlock()
	p.Close()
	made, discarded := c.counts()
	if made != discarded+1 { // every item but the one taken
		t.Errorf("made %d, discarded %d: want all but the taken one discarded", made, discarded)
	}
}

// TestPoolGrowsWhenDrained: each create that finds the pool drained
// doubles what it refills to, within Growth × its size; it refills to
// that between bursts; items retired unused shrink it back to its size.
func TestPoolGrowsWhenDrained(t *testing.T) {
	c := &counter{}
	p := New(t.TempDir(), 0o700, 1, c.make, c.discard, slog.New(slog.DiscardHandler))
	p.maxAge = time.Hour
	defer p.Close()
	if _, ok := p.Take(); ok || p.Target() != 1 {
		t.Fatalf("the first take: ok %v, target %d; want a miss that starts the pool at 1", ok, p.Target())
	}
	waitReady(t, p, 1)
	if _, ok := p.Take(); !ok {
		t.Fatal("no warm item")
	}
	for _, want := range []int{2, 4, 8, 8} {
		if _, ok := p.Take(); ok {
			t.Fatal("a drained pool had an item")
		}
		if got := p.Target(); got != want {
			t.Fatalf("target after a miss %d; want %d", got, want)
		}
	}
	waitReady(t, p, 1*Growth)
	p.maxAge = 0 // every item is old; the filling loop reads it only on its hourly tick
	p.retire()
	if got := p.Target(); got != 1 {
		t.Fatalf("target after retiring every item %d; want the pool's size, 1", got)
	}
}

// waitReady waits until the pool holds n items.
func waitReady[T any](t *testing.T, p *Pool[T], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(p.ready) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d items; want %d", len(p.ready), n)
		}
	}
}
