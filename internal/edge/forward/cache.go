package forward

import (
	"context"
	"net/url"
	"sync"
	"time"
)

// nodeCache is Nodes with each answer kept for ttl, so a busy hop reads
// the registry about once a second per node, not once per request.
// Failures are not kept: a node that comes back is reached at once. An
// answer kept may be stale (the node restarted on another address):
// a hop that cannot connect on it forgets it and asks again (forward).
type nodeCache struct {
	nodes Nodes
	ttl   time.Duration
	mu    sync.Mutex
	urls  map[string]cachedURL
}

type cachedURL struct {
	u  *url.URL
	at time.Time
}

// url is node's base URL, and whether it was kept from an earlier answer.
func (c *nodeCache) url(ctx context.Context, node string) (u *url.URL, kept bool, err error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.urls[node]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.u, true, nil
	}
	u, err = c.nodes.URL(ctx, node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.urls, node)
		return nil, false, err
	}
	if c.ttl > 0 {
		c.urls[node] = cachedURL{u: u, at: now}
	}
	return u, false, nil
}

// forget drops the answer kept for node if it is still u.
func (c *nodeCache) forget(node string, u *url.URL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.urls[node]; ok && e.u == u {
		delete(c.urls, node)
	}
}
