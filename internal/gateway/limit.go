package gateway

import (
	"sync"
	"time"
)

// limiter keeps one token bucket and one in-flight count per sandbox and
// provider.
type limiter struct {
	mu sync.Mutex
	m  map[limitKey]*bucket
}

type limitKey struct{ sandbox, provider string }

type bucket struct {
	tokens, burst, perSec float64
	last                  time.Time
	inflight              int
}

// refill adds the tokens earned since the last call, up to the burst.
func (b *bucket) refill(now time.Time) {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.perSec)
	b.last = now
}

// pruneAbove is the number of buckets past which idle ones are dropped.
const pruneAbove = 4096

// take admits one call of sandbox to p at now. When it is refused, wait
// says when a token comes (zero when the refusal is for calls in flight).
// release must be called when an admitted call ends.
func (l *limiter) take(sandbox string, p *Provider, now time.Time) (release func(), wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[limitKey]*bucket{}
	}
	k := limitKey{sandbox, p.Name}
	b := l.m[k]
	if b == nil {
		if len(l.m) >= pruneAbove {
			l.prune(now)
		}
		b = &bucket{tokens: float64(p.Burst), last: now}
		l.m[k] = b
	}
	b.burst, b.perSec = float64(p.Burst), float64(p.RequestsPerMinute)/60
	b.refill(now)
	if b.inflight >= p.MaxConcurrent {
		return nil, 0, false
	}
	if b.tokens < 1 {
		return nil, time.Duration((1 - b.tokens) / b.perSec * float64(time.Second)), false
	}
	b.tokens--
	b.inflight++
	return func() {
		l.mu.Lock()
		b.inflight--
		l.mu.Unlock()
	}, 0, true
}

// prune drops the buckets that are full with nothing in flight: a new
// bucket starts full, so forgetting them changes nothing.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.m {
		if b.refill(now); b.inflight == 0 && b.tokens >= b.burst {
			delete(l.m, k)
		}
	}
}
