package gateway

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps one token bucket and one in-flight count per sandbox and
// provider.
type limiter struct {
	mu sync.Mutex
	m  map[limitKey]*limit
}

type limitKey struct{ sandbox, provider string }

// limit is one sandbox's bounds on one provider.
type limit struct {
	rate     *rate.Limiter
	inflight int
}

// pruneAbove is the number of limits past which idle ones are dropped.
const pruneAbove = 4096

// take admits one call of sandbox to p at now. When it is refused, wait
// says when a token comes (zero when the refusal is for calls in flight).
// release must be called when an admitted call ends.
func (l *limiter) take(sandbox string, p *Provider, now time.Time) (release func(), wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[limitKey]*limit{}
	}
	perSec := rate.Limit(float64(p.RequestsPerMinute) / 60)
	k := limitKey{sandbox, p.Name}
	e := l.m[k]
	if e == nil {
		if len(l.m) >= pruneAbove {
			l.prune(now)
		}
		e = &limit{rate: rate.NewLimiter(perSec, p.Burst)} // starts full
		l.m[k] = e
	}
	// The provider's limits may have changed since the last call.
	if e.rate.Limit() != perSec {
		e.rate.SetLimitAt(now, perSec)
	}
	if e.rate.Burst() != p.Burst {
		e.rate.SetBurstAt(now, p.Burst)
	}
	if e.inflight >= p.MaxConcurrent {
		return nil, 0, false
	}
	r := e.rate.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now) // refused, so the token is given back
		return nil, wait, false
	}
	e.inflight++
	return func() {
		l.mu.Lock()
		e.inflight--
		l.mu.Unlock()
	}, 0, true
}

// prune drops the limits whose bucket is full with nothing in flight: a
// new limit starts full, so forgetting them changes nothing.
func (l *limiter) prune(now time.Time) {
	for k, e := range l.m {
		if e.inflight == 0 && e.rate.TokensAt(now) >= float64(e.rate.Burst()) {
			delete(l.m, k)
		}
	}
}
