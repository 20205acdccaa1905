package sandbox

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// The door: every call that reaches a running sandbox's agent, from the
// API, the router or the gateway, begins with open and ends with end.
// open checks the sandbox is the caller's and running, holds a place in
// the sandbox's quota of calls in flight, and records the activity that
// idle reaping reads (LastActivity); end frees the place and writes the
// audit line. Only this file and live.go hold agent clients.

// Stream is a stream of events from a sandbox: a command's output, a
// process's output, file changes. Next returns io.EOF after the last
// event; Close ends the stream (and its call) and may be called at any
// time, more than once.
type Stream[T any] interface {
	Next() (T, error)
	Close() error
}

// Recycle hands b, the Data of an event st returned, back to st once the
// caller is done with it (written out, copied), so a later event may be
// read into it instead of a fresh allocation; the caller must not touch b
// afterwards. A stream keeps what it is handed: no buffer reaches another
// stream. Streams that cannot reuse buffers ignore it.
func Recycle(st any, b []byte) {
	if r, ok := st.(interface{ Recycle([]byte) }); ok {
		r.Recycle(b)
	}
}

// call is one call through the door.
type call struct {
	s     *Service
	lv    *live
	ctx   context.Context // the caller's, without its cancellation
	rec   *store.Sandbox
	agent *agentclient.Client
	op    string
	start time.Time
	once  sync.Once
	// held gives back the place a call its tenant holds open (a watch, a
	// stream) took in the tenant's quota; nil for other calls.
	held func()
}

// openHeld is open for a call its caller's tenant holds open, a watch
// or a stream: it takes a place in the tenant's quota of those first
// (quota.Service.Open: 429 quota_exceeded when there is none), given back
// when the call ends. The system's own calls hold none.
func (s *Service) openHeld(ctx context.Context, id, op string, kind quota.Kind) (*call, error) {
	release := func() {}
	if p, ok := tenancy.From(ctx); ok && p.TenantID != "" {
		var err error
		if release, err = s.cfg.Quotas.Open(ctx, p.TenantID, kind); err != nil {
			return nil, err
		}
	}
	c, err := s.open(ctx, id, op)
	if err != nil {
		release()
		return nil, err
	}
	c.held = release
	return c, nil
}

// open lets a call to sandbox id through the door, or says why not.
func (s *Service) open(ctx context.Context, id, op string) (*call, error) {
	rec, err := s.record(ctx, id)
	if err != nil {
		return nil, err
	}
	if !reachable(rec.State) {
		return nil, notRunning(rec)
	}
	if rec.State == api.StatePaused {
		if rec, err = s.autoResume(ctx, id, op); err != nil {
			return nil, err
		}
		if rec.State != api.StateRunning { // stopped or destroyed meanwhile
			return nil, notRunning(rec)
		}
	}
	if _, err := s.drivers.of(rec); err != nil {
		return nil, err
	}
	// The client of a running sandbox is kept from its attach; the handle
	// (a decode and an unseal of its token) is read only without one.
	lv := s.lookup(id)
	if lv == nil || lv.agent() == nil {
		h, err := s.seals.decodeHandle(rec)
		if err != nil {
			return nil, err
		}
		lv = s.adopt(id, h)
	}
	now := time.Now()
	lv.mu.Lock()
	agent := lv.client
	switch {
	case agent == nil: // let go of meanwhile
		lv.mu.Unlock()
		return nil, errdefs.Conflict("sandbox_not_running", "sandbox %s stopped running as the call began", id)
	case lv.calls >= s.cfg.MaxCallsPerSandbox:
		lv.mu.Unlock()
		return nil, errdefs.New(errdefs.ErrRateLimited, "too_many_calls", "sandbox %s already has %d calls in flight; end some (streams, terminals, watches) first", id, s.cfg.MaxCallsPerSandbox)
	}
	lv.calls++
	lv.active = now
	lv.mu.Unlock()
	return &call{s: s, lv: lv, ctx: context.WithoutCancel(ctx), rec: rec, agent: agent, op: op, start: now}, nil
}

// agent is lv's client, nil while it is suspended or closed.
func (lv *live) agent() *agentclient.Client {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return lv.client
}

// newAgentClient is a client of the agent of h.
func newAgentClient(h driver.Handle) *agentclient.Client {
	return agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info))
}

// handleOf is a sandbox's handle: the attached one, or decoded from rec.
func (s *Service) handleOf(rec *store.Sandbox) (driver.Handle, error) {
	if lv := s.lookup(rec.ID); lv != nil {
		lv.mu.Lock()
		h, ok := lv.handle, lv.client != nil
		lv.mu.Unlock()
		if ok {
			return h, nil
		}
	}
	return s.seals.decodeHandle(rec)
}

// end closes the call: it frees its place in the quota, logs it and tells
// the Observer, once. It returns err as the caller should see it
// (explain).
func (c *call) end(err error) error {
	err = c.explain(err)
	c.once.Do(func() {
		if c.held != nil {
			c.held()
		}
		c.lv.mu.Lock()
		c.lv.calls--
		c.lv.active = time.Now()
		c.lv.mu.Unlock()
		p, _ := tenancy.From(c.ctx)
		c.s.log.Debug("sandbox call", logattr.Sandbox(c.rec.ID), logattr.Tenant(c.rec.TenantID), logattr.Key(p.KeyID), "op", c.op,
			"duration_ms", float64(time.Since(c.start).Microseconds())/1000, "ok", err == nil || errors.Is(err, io.EOF))
		c.s.observe.call(c.op, err)
		if lostAgent(err) {
			c.s.reportLost(c.rec.ID)
		}
	})
	return err
}

// explain turns an agent that went away under a call into what happened
// to its sandbox: a stop or destroy that raced the call is a 409, not a
// broken agent.
func (c *call) explain(err error) error {
	if err == nil || errors.Is(err, io.EOF) || !errors.Is(err, errdefs.ErrUnavailable) {
		return err
	}
	rec, gerr := c.s.store.GetSandbox(c.ctx, c.rec.ID)
	if gerr == nil && rec.State != api.StateRunning {
		return notRunning(rec)
	}
	return err
}

// notRunning is the error of a call to a sandbox that is not running.
func notRunning(rec *store.Sandbox) error {
	if rec.State == api.StateUnavailable {
		return Unavailable(rec)
	}
	return errdefs.Conflict("sandbox_not_running", "sandbox %s is %s, not running", rec.ID, rec.State)
}

// LastActivity is when a call to the sandbox last began or ended through
// this server, or it was otherwise busy, and false when it is not live
// here.
func (s *Service) LastActivity(id string) (time.Time, bool) {
	lv := s.lookup(id)
	if lv == nil {
		return time.Time{}, false
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return lv.active, !lv.active.IsZero()
}

// unary runs one request-answer call through the door.
func unary[T any](ctx context.Context, s *Service, id, op string, fn func(context.Context, *agentclient.Client) (T, error)) (T, error) {
	c, err := s.open(ctx, id, op)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := fn(ctx, c.agent)
	return v, c.end(err)
}

// stream is a Stream whose Close ends its call.
type stream[T any] struct {
	c       *call
	next    func() (T, error)
	close   func() error
	recycle func([]byte) // nil: the stream reuses no buffers
}

func (st *stream[T]) Recycle(b []byte) {
	if st.recycle != nil {
		st.recycle(b)
	}
}

func (st *stream[T]) Next() (T, error) {
	v, err := st.next()
	return v, st.c.explain(err)
}

func (st *stream[T]) Close() error {
	err := st.close()
	st.c.end(nil)
	return err
}

// body is a byte stream whose Close ends its call.
type body struct {
	io.ReadCloser
	c *call
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.c.end(nil)
	return err
}

// readBody opens a byte stream from the agent through the door.
func (s *Service) readBody(ctx context.Context, id, op string, fn func(*agentclient.Client) (io.ReadCloser, error)) (io.ReadCloser, error) {
	c, err := s.open(ctx, id, op)
	if err != nil {
		return nil, err
	}
	rc, err := fn(c.agent)
	if err != nil {
		return nil, c.end(err)
	}
	return &body{ReadCloser: rc, c: c}, nil
}
