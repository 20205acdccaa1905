package auth

import (
	"context"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// The keys, kept in memory. Every request looked its key up in the store,
// a SQLite query per exec; the Authenticator now keeps the keys it looked
// up, with their tenant's state, for keyTTL, and the store stays the
// record. What changes a key or its tenant on this server forgets it at
// once: Revoke and RevokeTenant after the store deleted the keys, and
// TenantChanged after a tenant's state changed (its suspension, its
// deletion). A lookup that began before such a change and ends after it
// is not kept (the generation), so a revoked key is refused by the next
// request. A change another control plane on the same store made, told
// by the store (StoreChanged, changes.go), forgets the same way; keyTTL
// bounds how long one goes unseen here when its telling is lost.

// keyTTL is how long a kept key serves requests before it is read again.
const keyTTL = time.Second

// maxKeptKeys bounds the keys kept; past it, the expired ones go, and
// all of them when none has expired.
const maxKeptKeys = 10_000

// keyCache is the keys kept in memory, by id.
type keyCache struct {
	mu   sync.Mutex
	gen  uint64 // counts the changes that forgot keys
	keys map[string]keptKey
}

// keptKey is one key and when it was read.
type keptKey struct {
	k  store.Key
	at time.Time
}

// lookup is key id, from memory while it is fresh, else from st.
func (c *keyCache) lookup(ctx context.Context, st store.Keys, id string, now time.Time) (store.Key, error) {
	c.mu.Lock()
	kk, ok := c.keys[id]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Sub(kk.at) < keyTTL {
		return kk.k, nil
	}
	k, err := st.LookupKey(ctx, id)
	if err != nil {
		return k, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return k, nil // a change overtook the lookup: not kept
	}
	if c.keys == nil {
		c.keys = make(map[string]keptKey)
	}
	if len(c.keys) >= maxKeptKeys {
		for id, kk := range c.keys {
			if now.Sub(kk.at) >= keyTTL {
				delete(c.keys, id)
			}
		}
		if len(c.keys) >= maxKeptKeys {
			clear(c.keys)
		}
	}
	c.keys[id] = keptKey{k: k, at: now}
	return k, nil
}

// forgetAll drops every key.
func (c *keyCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.keys)
}

// forget drops keys ids, and the keys of tenantID when it is not "".
func (c *keyCache) forget(ids []string, tenantID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		delete(c.keys, id)
	}
	if tenantID == "" {
		return
	}
	for id, kk := range c.keys {
		if kk.k.TenantID == tenantID {
			delete(c.keys, id)
		}
	}
}
