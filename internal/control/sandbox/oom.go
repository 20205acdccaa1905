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

// oomSeen is the out-of-memory kill count last seen of a live sandbox.
// The first reading after the service attaches is the baseline: earlier
// kills were reported by whoever saw them (this server before a stop or a
// restart, or nobody for a new sandbox, which has none).
type oomSeen struct {
	n    uint64
	seen bool
}

// ObserveOOM reads a live sandbox's OOM kill count from its driver and,
// when it grew since the last reading, appends a sandbox.oom event. It
// returns the count, or false when the driver cannot tell. The lifecycle
// policies call it for every running sandbox, so kills of background
// processes nobody waited for are reported too.
func (s *Service) ObserveOOM(ctx context.Context, rec *store.Sandbox) (uint64, bool) {
	return s.observeOOM(ctx, rec)
}

func (s *Service) observeOOM(ctx context.Context, rec *store.Sandbox) (uint64, bool) {
	d, err := s.drivers.of(rec)
	if err != nil {
		return 0, false
	}
	oc, ok := d.(driver.OOMCounter)
	if !ok {
		return 0, false
	}
	lv := s.lookup(rec.ID)
	if lv == nil {
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
	lv.mu.Lock()
	last := lv.oom
	lv.oom = oomSeen{n: n, seen: true}
	lv.mu.Unlock()
	if last.seen && n > last.n {
		s.emit(ctx, rec, api.EventSandboxOOM,
			fmt.Sprintf("the out-of-memory killer killed %d process(es) at the sandbox's memory limit of %d MiB", n-last.n, rec.Limits.MemoryMB),
			map[string]any{"kills": n - last.n, "total_kills": n, "memory_mb": rec.Limits.MemoryMB})
	}
	return n, true
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
