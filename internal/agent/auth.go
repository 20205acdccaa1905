package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"sync"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// replayWindow is how many recent nonces the agent remembers and refuses.
const replayWindow = 4096

// authenticate checks every request's MAC and refuses a nonce seen among
// the last replayWindow, and answers every request that carries a
// well-formed nonce with the agent's proof, errors included, so the client
// knows it reached this sandbox's agent. A control plane of protocol 2
// signs method, path, query and body (agentproto.RequestMAC), and the body
// is checked as the handler reads it (verifiedBody); protocol 1's MAC
// (method and path) is accepted only when the envelope came from a control
// plane of protocol 1 (Config.ClientProtocol).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce := r.Header.Get(agentproto.HeaderNonce)
		if !agentproto.ValidNonce(nonce) {
			s.writeError(w, r, unauthorized("the request carries no valid %s header", agentproto.HeaderNonce))
			return
		}
		w.Header().Set(agentproto.HeaderProof, agentproto.Proof(s.cfg.Token, nonce))
		if s.cfg.ClientProtocol == 1 {
			want := agentproto.RequestMACv1(s.cfg.Token, nonce, r.Method, r.URL.Path)
			if !agentproto.Equal(r.Header.Get(agentproto.HeaderAuth), want) {
				s.writeError(w, r, unauthorized("the request's signature does not match"))
				return
			}
		} else {
			body := r.Header.Get(agentproto.HeaderBody)
			want := agentproto.RequestMAC(s.cfg.Token, nonce, r.Method, r.URL.Path, r.URL.RawQuery, body)
			if !agentproto.Equal(r.Header.Get(agentproto.HeaderAuth), want) {
				s.writeError(w, r, unauthorized("the request's signature does not match"))
				return
			}
			if err := s.checkBody(r, nonce, body); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if !s.nonces.add(nonce) {
			s.writeError(w, r, unauthorized("the request's nonce was already used"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkBody puts a verifiedBody in place of r's body, as its signed
// HeaderBody says: the body's hash, or framed with its MAC at its end.
func (s *Server) checkBody(r *http.Request, nonce, body string) error {
	switch {
	case body == agentproto.BodyFramed:
		r.Body = &verifiedBody{r: agentproto.UnframeBody(r.Body, s.cfg.Token, nonce), c: r.Body}
	case len(body) == sha256.Size*2:
		r.Body = &verifiedBody{r: r.Body, c: r.Body, h: sha256.New(), want: body}
	default:
		return unauthorized("the request carries no valid %s header", agentproto.HeaderBody)
	}
	return nil
}

// verifiedBody ends a body that does not match its signature with
// httpio.ErrBodyUnverified: a hashed body is hashed as it is read and compared at
// its end (h and want set); a framed one checks its own MAC.
type verifiedBody struct {
	r    io.Reader
	c    io.Closer
	h    hash.Hash
	want string
	err  error
}

func (v *verifiedBody) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if v.h != nil {
		v.h.Write(p[:n])
		if err == io.EOF && !agentproto.Equal(hex.EncodeToString(v.h.Sum(nil)), v.want) {
			err = httpio.ErrBodyUnverified
		}
	}
	if errors.Is(err, agentproto.ErrBodyMismatch) {
		err = httpio.ErrBodyUnverified
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *verifiedBody) Close() error { return v.c.Close() }

func unauthorized(format string, args ...any) error {
	return errdefs.New(errdefs.ErrUnauthorized, "unauthorized", format, args...)
}

// nonceCache remembers the last replayWindow nonces. It grows as nonces
// come, not at start: most sandboxes never see a window's worth, and the
// window's room (about 100 KiB) would be paid by every idle agent.
type nonceCache struct {
	mu   sync.Mutex
	ring []string // up to replayWindow; then next is the oldest
	next int
	seen map[string]struct{}
}

func newNonceCache() *nonceCache {
	return &nonceCache{seen: make(map[string]struct{})}
}

// add records nonce and reports false if it was already there.
func (c *nonceCache) add(nonce string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[nonce]; ok {
		return false
	}
	if len(c.ring) < replayWindow {
		c.ring = append(c.ring, nonce)
	} else {
		delete(c.seen, c.ring[c.next])
		c.ring[c.next] = nonce
		c.next = (c.next + 1) % replayWindow
	}
	c.seen[nonce] = struct{}{}
	return true
}
