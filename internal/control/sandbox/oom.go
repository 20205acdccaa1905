package sandbox

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// oomCounts are the out-of-memory kill counts last seen per sandbox. A
// sandbox first seen with kills (after a restart) is recorded without an
// event; its earlier kills were reported by the server that saw them.
type oomCounts map[string]uint64

// observeOOM reads a running sandbox's OOM kill count from the driver and,
// when it grew since the last reading, appends a sandbox.oom event. It
// returns the count, or false when the driver cannot tell.
func (s *Service) observeOOM(ctx context.Context, rec *store.Sandbox) (uint64, bool) {
	d, err := s.driverOf(rec)
	if err != nil {
		return 0, false
	}
	oc, ok := d.(driver.OOMCounter)
	if !ok {
		return 0, false
	}
	h, err := s.handleOf(rec)
	if err != nil {
		return 0, false
	}
	n, err := oc.OOMKills(ctx, h)
	if err != nil {
		s.log.Warn("read oom kills", logattr.Sandbox(rec.ID), "err", err)
		return 0, false
	}
	s.mu.Lock()
	last, seen := s.ooms[rec.ID]
	s.ooms[rec.ID] = n
	s.mu.Unlock()
	if seen && n > last {
		s.emit(ctx, rec, api.EventSandboxOOM,
			fmt.Sprintf("the out-of-memory killer killed %d process(es) at the sandbox's memory limit of %d MiB", n-last, rec.Limits.MemoryMB),
			map[string]any{"kills": n - last, "total_kills": n, "memory_mb": rec.Limits.MemoryMB})
	}
	return n, true
}

// seedOOM starts a new sandbox's count at zero, so its first kill is
// reported.
func (s *Service) seedOOM(id string) {
	s.mu.Lock()
	s.ooms[id] = 0
	s.mu.Unlock()
}

// forgetOOM drops a sandbox's count once it is gone.
func (s *Service) forgetOOM(id string) {
	s.mu.Lock()
	delete(s.ooms, id)
	s.mu.Unlock()
}

// watchOOM observes every running sandbox: the lifecycle loop's way to
// report kills of background processes nobody waited for.
func (s *Service) watchOOM(ctx context.Context) {
	recs, err := s.store.AllSandboxes(ctx, api.StateRunning)
	if err != nil {
		s.log.Warn("watch oom", "err", err)
		return
	}
	for _, rec := range recs {
		if s.owns(rec) {
			s.observeOOM(ctx, rec)
		}
	}
}

// execStream is a running command's events, as the agent sends them,
// except that the exit event says whether the out-of-memory killer struck
// the sandbox while the command ran.
type execStream struct {
	s      *Service
	ctx    context.Context
	rec    *store.Sandbox
	st     *agentclient.ExecStream
	before uint64
	counts bool
}

// Next returns the next event (io.EOF after the exit event).
func (e *execStream) Next() (api.ExecEvent, error) {
	ev, err := e.st.Next()
	if err == nil && ev.Type == api.ExecExit && ev.Exit != nil && e.counts {
		if after, ok := e.s.observeOOM(e.ctx, e.rec); ok && after > e.before {
			ev.Exit.OOMKilled = true
		}
	}
	return ev, err
}
