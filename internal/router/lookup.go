package router

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// lookupTTL is how long the router trusts what it read of a running
// sandbox and its port. Making a port private through this server's API
// takes effect at once (Forget); a change made elsewhere within this time.
// A sandbox that stopped meanwhile fails at the tunnel, whose dial reads
// the store again; sandboxes not running are read on every request.
const lookupTTL = time.Second

// maxLookups bounds the cache; past it, expired entries are dropped.
const maxLookups = 4096

// lookup is what the router read for one target.
type lookup struct {
	sb     *store.Sandbox // nil: no such sandbox
	public bool
	at     time.Time
}

type lookups struct {
	mu sync.Mutex
	m  map[Target]lookup
}

// find returns the target's sandbox (nil when there is none) and whether
// its port is public, from the cache when it is fresh.
func (rt *Router) find(sys context.Context, t Target) (*store.Sandbox, bool, error) {
	now := rt.cfg.Now()
	rt.cache.mu.Lock()
	l, ok := rt.cache.m[t]
	rt.cache.mu.Unlock()
	if ok && now.Sub(l.at) < lookupTTL {
		return l.sb, l.public, nil
	}
	sb, err := rt.cfg.Sandboxes.GetSandbox(sys, t.SandboxID)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		sb = nil
	case err != nil:
		return nil, false, err
	}
	l = lookup{sb: sb, public: sb != nil && rt.isPublic(sys, t), at: now}
	if sb == nil || sb.State != api.StateRunning {
		return l.sb, l.public, nil
	}
	rt.cache.mu.Lock()
	defer rt.cache.mu.Unlock()
	if rt.cache.m == nil {
		rt.cache.m = map[Target]lookup{}
	}
	if len(rt.cache.m) >= maxLookups {
		for k, v := range rt.cache.m {
			if now.Sub(v.at) >= lookupTTL {
				delete(rt.cache.m, k)
			}
		}
	}
	if len(rt.cache.m) < maxLookups {
		rt.cache.m[t] = l
	}
	return l.sb, l.public, nil
}

// Forget drops what the router keeps of a sandbox's ports: the API calls
// it when a port's setting changes, so the next request reads it anew.
func (rt *Router) Forget(sandboxID string) {
	rt.cache.mu.Lock()
	defer rt.cache.mu.Unlock()
	for k := range rt.cache.m {
		if k.SandboxID == sandboxID {
			delete(rt.cache.m, k)
		}
	}
}
