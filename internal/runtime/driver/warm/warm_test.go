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
