package agent

import (
	"net/http"
	"sync"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// replayWindow is how many recent nonces the agent remembers and refuses.
const replayWindow = 4096

// authenticate checks every request's MAC (agentproto.RequestMAC) and
// refuses a nonce seen among the last replayWindow, and answers every
// request that carries a well-formed nonce with the agent's proof, errors
// included, so the client knows it reached this sandbox's agent.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce := r.Header.Get(agentproto.HeaderNonce)
		if !agentproto.ValidNonce(nonce) {
			s.writeError(w, r, unauthorized("the request carries no valid %s header", agentproto.HeaderNonce))
			return
		}
		w.Header().Set(agentproto.HeaderProof, agentproto.Proof(s.cfg.Token, nonce))
		want := agentproto.RequestMAC(s.cfg.Token, nonce, r.Method, r.URL.Path)
		if !agentproto.Equal(r.Header.Get(agentproto.HeaderAuth), want) {
			s.writeError(w, r, unauthorized("the request's signature does not match"))
			return
		}
		if !s.nonces.add(nonce) {
			s.writeError(w, r, unauthorized("the request's nonce was already used"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func unauthorized(format string, args ...any) error {
	return errdefs.New(errdefs.ErrUnauthorized, "unauthorized", format, args...)
}

// nonceCache remembers the last replayWindow nonces.
type nonceCache struct {
	mu   sync.Mutex
	ring [replayWindow]string
	next int
	seen map[string]struct{}
}

func newNonceCache() *nonceCache {
	return &nonceCache{seen: make(map[string]struct{}, replayWindow)}
}

// add records nonce and reports false if it was already there.
func (c *nonceCache) add(nonce string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[nonce]; ok {
		return false
	}
	if old := c.ring[c.next]; old != "" {
		delete(c.seen, old)
	}
	c.ring[c.next] = nonce
	c.next = (c.next + 1) % replayWindow
	c.seen[nonce] = struct{}{}
	return true
}
