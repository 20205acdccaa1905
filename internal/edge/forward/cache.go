package forward

import (
	"context"
	"net/url"
	"sync"
	"time"
)

// Cached is nodes with each answer kept for ttl, so a busy hop reads the
// registry about once a second per node, not once per request. Failures
// are not kept: a node that comes back is reached at once.
func Cached(nodes Nodes, ttl time.Duration) Nodes {
	return &cached{nodes: nodes, ttl: ttl, urls: map[string]cachedURL{}}
}

type cached struct {
	nodes Nodes
	ttl   time.Duration
	mu    sync.Mutex
	urls  map[string]cachedURL
}

type cachedURL struct {
	u  *url.URL
	at time.Time
}

func (c *cached) URL(ctx context.Context, node string) (*url.URL, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.urls[node]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.u, nil
	}
	u, err := c.nodes.URL(ctx, node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.urls, node)
		return nil, err
	}
	c.urls[node] = cachedURL{u: u, at: now}
	return u, nil
}
