package watch

import "time"

// Bounds are the bounds of file watches a test may shrink; zero
// fields are left as they are.
type Bounds struct {
	QueueMax int
	Window   time.Duration
	Slots    int
	MaxDirs  int
}

// SetBounds sets the watch bounds for a test and returns what
// restores them. Watches opened before keep theirs.
func SetBounds(b Bounds) (restore func()) {
	q, w, s, d := watchQueueMax, watchWindow, watchSlots, watchMaxDirs
	if b.QueueMax > 0 {
		watchQueueMax = b.QueueMax
	}
	if b.Window > 0 {
		watchWindow = b.Window
	}
	if b.Slots > 0 {
		watchSlots = make(chan struct{}, b.Slots)
	}
	if b.MaxDirs > 0 {
		watchMaxDirs = b.MaxDirs
	}
	return func() { watchQueueMax, watchWindow, watchSlots, watchMaxDirs = q, w, s, d }
}
