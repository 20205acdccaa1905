package quota

import (
	"context"
	"sync"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// What a tenant's keys hold open on this server, counted in memory: each
// takes its place when it opens and gives it back when it ends, so the
// count is what is open now (a restart begins at none, as nothing is
// open then).

// Kind is a kind of what a tenant holds open.
type Kind int

const (
	// Watch is a file watch of a sandbox directory (the API's and the
	// E2B layer's).
	Watch Kind = iota
	// Stream is a stream held open for a client: the events, a command's
	// or process's output, an app's logs, a terminal's input.
	Stream
	kinds
)

func (k Kind) quota() string {
	if k == Watch {
		return "watches"
	}
	return "streams"
}

// Open takes a place for one more kind of tenantID's, or refuses with
// 429 quota_exceeded. The place is held until release, which may be
// called more than once.
func (s *Service) Open(ctx context.Context, tenantID string, kind Kind) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	t, err := s.store.GetTenant(tenancy.System(ctx), tenantID)
	if err != nil {
		return nil, err
	}
	l := s.Limits(t.Quotas)
	limit := l.Streams
	if kind == Watch {
		limit = l.Watches
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.open[tenantID]
	if o == nil {
		o = new([kinds]int)
		s.open[tenantID] = o
	}
	if limit > 0 && o[kind] >= limit {
		s.log.Info("open refused: tenant quota", logattr.Tenant(tenantID), "quota", kind.quota(), "limit", limit)
		return nil, errdefs.New(errdefs.ErrRateLimited, "quota_exceeded",
			"quota %s exceeded: this tenant's keys hold %d %s open on this server of the %d allowed; close one first, or ask an admin to raise the quota",
			kind.quota(), o[kind], kind.quota(), limit)
	}
	o[kind]++
	var once sync.Once
	return func() { once.Do(func() { s.close(tenantID, kind) }) }, nil
}

// close gives back a place Open took.
func (s *Service) close(tenantID string, kind Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.open[tenantID]
	o[kind]--
	if *o == ([kinds]int{}) {
		delete(s.open, tenantID)
	}
}
