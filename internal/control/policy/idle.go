package policy

import (
	"context"
	"log/slog"
	"time"

	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// The idle policy. A running sandbox is busy while a call to it is in
// flight and for its idle window (idle_timeout_s at create, else the
// setting) after its last call or output; once idle for its window, and
// not kept alive, the setting on_idle is done to it (sandbox.Idle), or a
// pause under memory pressure (memory.go).
//
// Output is read from the agent's process list (the bytes each process
// wrote) only for a sandbox idle for half its window or more, so a quiet
// fleet costs no agent calls: output in the second half of the window
// counts at once, output in the first half as of the half. The count
// starts at zero when the service attaches to the agent: after a resume
// or a restart, output already written counts as new once.
type idle struct {
	svc    *sandbox.Service
	log    *slog.Logger
	memory HostMemory
	// output: sandbox id → the output its processes had written when it
	// was last read, of the sandboxes read in the last tick.
	output map[string]written
}

// written is a sandbox's output bytes as last read, and the attach they
// count from.
type written struct {
	bytes int64
	since time.Time
}

// tick does the idle and memory policy's actions.
func (p *idle) tick(ctx context.Context, now time.Time, running, paused []*store.Sandbox) {
	set := p.svc.Settings()
	pr := readPressure(p.memory, set, p.log)
	output := map[string]written{}
	for _, rec := range running {
		window := pr.window(seconds(cmp0(rec.IdleTimeoutS, set.IdleTimeoutS)))
		if window <= 0 || (rec.KeepaliveUntil != nil && rec.KeepaliveUntil.After(now)) {
			continue
		}
		if idle := p.idleFor(ctx, rec.ID, window, now, output); idle >= window {
			p.svc.Idle(ctx, rec.ID, idle, pr.action(set.OnIdle), pr.reason, now)
		}
	}
	p.output = output
	p.stopPaused(ctx, paused, set, pr, now)
}

// idleFor is how long sandbox id has gone without a call or output, as
// far as a sandbox busy for less than window needs to be known; what it
// read of the sandbox's output goes into output.
func (p *idle) idleFor(ctx context.Context, id string, window time.Duration, now time.Time, output map[string]written) time.Duration {
	a, ok := p.svc.Activity(id)
	if !ok {
		return 0 // not attached here: nothing to measure
	}
	if a.Calls > 0 {
		p.svc.Busy(id, now)
		return 0
	}
	last, seen := p.output[id]
	if !seen || !last.since.Equal(a.Since) {
		last = written{since: a.Since}
	}
	output[id] = last
	idle := now.Sub(a.Last)
	if idle < window/2 {
		return idle
	}
	out, err := p.svc.OutputBytes(ctx, id)
	if err != nil {
		return 0 // unknown: not idle
	}
	if out != last.bytes {
		output[id] = written{bytes: out, since: a.Since}
		p.svc.Busy(id, now)
		return 0
	}
	return idle
}

// cmp0 is a, or b when a is 0.
func cmp0(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
