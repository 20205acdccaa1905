package router

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// lookupTTL is how long the router trusts what it read of a running
// sandbox and its port. Making a port private through this server's API
// takes effect at once (Forget); a change made elsewhere within this time.
// A sandbox stopped or deleted meanwhile fails at the tunnel: either ends
// its agent and with it every tunnel (so its streams and WebSockets, and
// the idle tunnels a request would reuse), and a new tunnel's dial reads
// the store again. Sandboxes the door would not reach are read on every
// request.
//
// A busy preview never waits for the store: once what was read is
// lookupRefresh old, the one request that notices reads it anew while the
// others go on with it, so no more than one read per target is in flight
// and the entry is renewed before it expires.
const (
	lookupTTL     = time.Second
	lookupRefresh = lookupTTL / 2
)

// maxLookups bounds the cache; past it, expired entries are dropped.
const maxLookups = 4096

// lookup is what the router read for one target.
type lookup struct {
	pv         *sandbox.Preview // nil: no such sandbox
	at         time.Time
	refreshing bool // a request is reading it anew
}

type lookups struct {
	mu sync.Mutex
	m  map[Target]lookup
	// gen counts Forget calls: a read begun before one is not kept.
	gen uint64
}

// find returns what the sandbox service resolves of the target (nil when
// there is no such sandbox), from the cache when it is fresh.
func (rt *Router) find(ctx context.Context, t Target) (*sandbox.Preview, error) {
	now := rt.cfg.Now()
	c := &rt.cache
	c.mu.Lock()
	l, ok := c.m[t]
	fresh := ok && now.Sub(l.at) < lookupTTL
	refresh := fresh && !l.refreshing && now.Sub(l.at) >= lookupRefresh
	if refresh {
		l.refreshing = true
		c.m[t] = l
	}
	gen := c.gen
	c.mu.Unlock()
	if fresh && !refresh {
		return l.pv, nil
	}
	var pv *sandbox.Preview
	p, err := rt.cfg.Sandboxes.Preview(ctx, t.SandboxID, t.Port)
	switch {
	case err == nil:
		pv = &p
	case errors.Is(err, errdefs.ErrNotFound):
		// No such sandbox: pv stays nil.
	default:
		if refresh {
			// What was read still holds; the next request tries again.
			c.mu.Lock()
			if cur, ok := c.m[t]; ok && cur.at.Equal(l.at) {
				cur.refreshing = false
				c.m[t] = cur
			}
			c.mu.Unlock()
			return l.pv, nil
		}
		return nil, err
	}
	nl := lookup{pv: pv, at: now}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.gen != gen:
		// Forgotten while it was read: the next request reads again.
	case pv == nil || !pv.Reachable():
		delete(c.m, t)
	default:
		if c.m == nil {
			c.m = map[Target]lookup{}
		}
		if len(c.m) >= maxLookups {
			for k, v := range c.m {
				if now.Sub(v.at) >= lookupTTL {
					delete(c.m, k)
				}
			}
		}
		if _, ok := c.m[t]; ok || len(c.m) < maxLookups {
			c.m[t] = nl
		}
	}
	return nl.pv, nil
}

// Forget drops what the router keeps of a sandbox's ports: the API calls
// it when a port's setting changes, so the next request reads it anew.
func (rt *Router) Forget(sandboxID string) {
	rt.cache.mu.Lock()
	defer rt.cache.mu.Unlock()
	rt.cache.gen++
	for k := range rt.cache.m {
		if k.SandboxID == sandboxID {
			delete(rt.cache.m, k)
		}
	}
}
