package auth

import (
	"context"
	"sync"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// ErrKeyRevoked is the cause with which a request's context ends when its
// key is revoked (context.Cause).
var ErrKeyRevoked = errdefs.New(errdefs.ErrUnauthorized, "key_revoked", "the API key was revoked")

// sessions are the requests in flight, by the id of the key that
// authenticated each, so that revoking a key ends them. The Authenticator
// owns it: requests enter through Begin and leave through the end it
// returns, and only a revocation ends them early (Revoke, or one another
// control plane made, StoreChanged). The zero value is ready.
type sessions struct {
	mu   sync.Mutex
	open map[string]map[*session]struct{}
}

type session struct{ cancel context.CancelCauseFunc }

// add holds a request of keyID, ended by cancel; remove forgets it.
func (s *sessions) add(keyID string, cancel context.CancelCauseFunc) (remove func()) {
	ss := &session{cancel: cancel}
	s.mu.Lock()
	if s.open == nil {
		s.open = make(map[string]map[*session]struct{})
	}
	if s.open[keyID] == nil {
		s.open[keyID] = make(map[*session]struct{})
	}
	s.open[keyID][ss] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.open[keyID], ss)
		if len(s.open[keyID]) == 0 {
			delete(s.open, keyID)
		}
	}
}

// end cancels every request of keyIDs with cause and returns how many it
// ended.
func (s *sessions) end(keyIDs []string, cause error) int {
	s.mu.Lock()
	var ended []*session
	for _, id := range keyIDs {
		for ss := range s.open[id] {
			ended = append(ended, ss)
		}
		delete(s.open, id)
	}
	s.mu.Unlock()
	for _, ss := range ended {
		ss.cancel(cause)
	}
	return len(ended)
}

// keys returns the ids of the keys whose requests are held.
func (s *sessions) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.open))
	for id := range s.open {
		ids = append(ids, id)
	}
	return ids
}

// count returns how many requests of keyID are held (tests).
func (s *sessions) count(keyID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open[keyID])
}
