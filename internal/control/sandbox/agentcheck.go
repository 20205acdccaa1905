package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// A dead or hung agent. A call whose agent could not be reached, or whose
// stream broke, ends at once with its 503 (a hung agent's connection is
// dropped by the client's HTTP/2 pings within agentclient's bound), and
// the door reports the sandbox on LostAgents; the agent check policy
// (internal/control/policy) then calls CheckAgent beside the call. A dead
// agent (its process gone) marks the sandbox failed at once. One whose
// process lives is asked again every agentRecheck, each health check
// bounded by agentHealthTimeout, and only one that answers none of them
// for Config.AgentHungAfter, not counting the intervals in which it waited
// for a CPU, is failed: on a host that is overloaded (a restart with
// thousands alive) live agents go unanswered for seconds or minutes, and
// failing them would stop their users' processes for nothing and load the
// host more with their teardowns. A failed sandbox's processes are stopped; its files are kept
// until it is destroyed.

// agentHealthTimeout bounds one health check of an agent a call could not
// reach.
const agentHealthTimeout = 5 * time.Second

// agentRecheck spaces the health checks of an agent whose process lives
// but which did not answer.
const agentRecheck = 5 * time.Second

// DefaultAgentHungAfter is Config.AgentHungAfter's default.
const DefaultAgentHungAfter = time.Minute

// lostQueue bounds the sandboxes reported lost and not yet taken by the
// agent check. A report that finds it full is dropped: the next call that
// fails reports the sandbox again.
const lostQueue = 256

// lostAgent says whether err is a call's agent going away under it.
func lostAgent(err error) bool {
	return errdefs.HasCode(err, "agent_unreachable") || errdefs.HasCode(err, "agent_stream_broken")
}

// reportLost puts sandbox id on LostAgents, without waiting.
func (s *Service) reportLost(id string) {
	select {
	case s.lostAgents <- id:
	default:
		s.log.Debug("the agent check is behind: a lost agent is reported again by its next call", logattr.Sandbox(id))
	}
}

// LostAgents receives the id of a running sandbox whose agent a call
// could not reach, for CheckAgent.
func (s *Service) LostAgents() <-chan string { return s.lostAgents }

// CheckAgent fails sandbox id if it still runs and its agent is dead, or
// does not answer for Config.AgentHungAfter of the time it could have: a
// recheck interval in which the agent's threads waited for a CPU for at
// least a quarter of it (starvedShare) does not count, since on a host
// whose CPUs are all taken (thousands of agents woken at once, say) a live
// agent cannot answer, and failing it would stop its user's processes and
// load the host more. It holds the sandbox's lock only to decide, not
// while it waits.
func (s *Service) CheckAgent(ctx context.Context, id string) {
	giveUp := time.Now().Add(s.cfg.AgentHungAfter)
	var last agentProbe
	for {
		p, ok := s.probeAgent(ctx, id)
		if !ok {
			return // answered, or no longer a running sandbox of ours
		}
		if p.alive && !last.at.IsZero() {
			if since := p.at.Sub(last.at); p.waited-last.waited >= since/starvedShare {
				giveUp = giveUp.Add(since)
				s.log.Info("sandbox agent does not answer and waits for a CPU: the host is overloaded; not counted", logattr.Sandbox(id),
					"waited", (p.waited - last.waited).Round(time.Millisecond), "of", since.Round(time.Millisecond))
			}
		}
		last = p
		if p.alive && time.Now().Before(giveUp) {
			s.log.Info("sandbox agent does not answer; asking again", logattr.Sandbox(id), "reason", p.reason)
			select {
			case <-time.After(agentRecheck):
				continue
			case <-ctx.Done():
				return
			}
		}
		reason := p.reason
		if p.alive {
			reason = fmt.Sprintf("its agent did not answer for %s", s.cfg.AgentHungAfter)
		}
		s.failLost(ctx, id, p.rev, reason)
		return
	}
}

// starvedShare: an agent whose threads waited for a CPU for at least
// 1/starvedShare of a recheck interval was starved in it, not hung.
const starvedShare = 4

// agentProbe is one health check of an agent that did not answer.
type agentProbe struct {
	at     time.Time     // when its driver was asked
	rev    int64         // the revision of the record checked
	reason string        // what is wrong
	alive  bool          // whether its process lives
	waited time.Duration // driver.Status.Waited at
}

// probeAgent checks the agent of running sandbox id once: ok is false
// when it answered or the sandbox is not running.
func (s *Service) probeAgent(ctx context.Context, id string) (p agentProbe, ok bool) {
	rec, d, h, ok := s.runningSandbox(ctx, id)
	if !ok {
		return p, false
	}
	p.rev = rec.Rev
	// A client of its own: the attached one's connection may be the
	// broken one.
	a := newAgentClient(h)
	hctx, cancel := context.WithTimeout(ctx, agentHealthTimeout)
	_, err := a.Health(hctx)
	cancel()
	a.Close()
	if err == nil {
		return p, false // a broken connection, not a broken agent
	}
	st, serr := d.Status(ctx, h)
	p.at = time.Now()
	switch {
	case serr != nil || st.State != driver.Running:
		p.reason = "its agent is gone"
		if serr == nil && st.Detail != "" {
			p.reason = fmt.Sprintf("its agent is gone (%s)", st.Detail)
		}
	case errors.Is(err, context.DeadlineExceeded):
		p.reason, p.alive, p.waited = fmt.Sprintf("its agent did not answer within %s", agentHealthTimeout), true, st.Waited
	default:
		p.reason, p.alive, p.waited = fmt.Sprintf("its agent does not answer (%v)", err), true, st.Waited
	}
	return p, true
}

// failLost fails sandbox id, under its lock, if its record is still the
// running one of revision rev that was checked (not one restarted since),
// and stops what is left of its processes.
func (s *Service) failLost(ctx context.Context, id string, rev int64, reason string) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, d, h, ok := s.runningSandbox(ctx, id)
	if !ok || rec.Rev != rev {
		return
	}
	s.log.Warn("sandbox agent lost", logattr.Sandbox(id), "reason", reason)
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	s.detach(id)
	if err := d.Stop(tctx, h); err != nil {
		s.log.Warn("stop the processes of a sandbox whose agent is lost", logattr.Sandbox(id), "err", err)
	}
	s.fail(tctx, id, errdefs.New(errdefs.ErrUnavailable, "agent_lost", "%s", reason))
}

// runningSandbox reads sandbox id's record, its driver and its handle;
// false when it is not running or either cannot be had.
func (s *Service) runningSandbox(ctx context.Context, id string) (*store.Sandbox, driver.Driver, driver.Handle, bool) {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StateRunning {
		return nil, nil, driver.Handle{}, false
	}
	d, err := s.drivers.of(rec)
	if err != nil {
		return nil, nil, driver.Handle{}, false
	}
	h, err := s.handleOf(rec)
	if err != nil {
		return nil, nil, driver.Handle{}, false
	}
	return rec, d, h, true
}
