package agent

import "time"

// SetWatchBounds sets the watch bounds for a test (zero leaves one as it
// is) and returns what restores them. Watches opened before keep theirs.
func SetWatchBounds(queueMax int, window time.Duration, slots int) (restore func()) {
	q, w, s := watchQueueMax, watchWindow, watchSlots
	if queueMax > 0 {
		watchQueueMax = queueMax
	}
	if window > 0 {
		watchWindow = window
	}
	if slots > 0 {
		watchSlots = make(chan struct{}, slots)
	}
	return func() { watchQueueMax, watchWindow, watchSlots = q, w, s }
}
