package supervisor

import "time"

// Timing is the supervisor's restart policy and intervals, which a test
// may shrink; zero fields are left as they are.
type Timing struct {
	BackoffMin, BackoffMax, ResetAfter, FastWindow time.Duration
	FastLimit                                      int
	StopGrace, Poll                                time.Duration
}

// SetTiming sets the timing of the supervisors made after it and returns
// what restores it.
func SetTiming(t Timing) (restore func()) {
	old := appTiming
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&appTiming.BackoffMin, t.BackoffMin)
	set(&appTiming.BackoffMax, t.BackoffMax)
	set(&appTiming.ResetAfter, t.ResetAfter)
	set(&appTiming.FastWindow, t.FastWindow)
	set(&appTiming.StopGrace, t.StopGrace)
	set(&appTiming.Poll, t.Poll)
	if t.FastLimit > 0 {
		appTiming.FastLimit = t.FastLimit
	}
	return func() { appTiming = old }
}
