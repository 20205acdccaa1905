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
)

// A dead or hung agent. A call whose agent could not be reached, or whose
// stream broke, ends at once with its 503 (a hung agent's connection is
// dropped by the client's HTTP/2 pings within agentclient's bound), and
// the door reports the sandbox on LostAgents; the agent check policy
// (internal/control/policy) then calls CheckAgent beside the call: a dead
// agent (its process gone) or one that does not answer a health check
// within agentHealthTimeout marks the sandbox failed with the reason, and
// what is left of its processes is stopped. Files are kept until it is
// destroyed.

// agentHealthTimeout bounds the health check of an agent a call could not
// reach.
const agentHealthTimeout = 5 * time.Second

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

// CheckAgent fails sandbox id, under its lock, if it still runs and its
// agent is dead or does not answer.
func (s *Service) CheckAgent(ctx context.Context, id string) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StateRunning {
		return
	}
	d, err := s.drivers.of(rec)
	if err != nil {
		return
	}
	h, err := s.handleOf(rec)
	if err != nil {
		return
	}
	// A client of its own: the attached one's connection may be the
	// broken one.
	a := newAgentClient(h)
	hctx, cancel := context.WithTimeout(ctx, agentHealthTimeout)
	_, err = a.Health(hctx)
	cancel()
	a.Close()
	if err == nil {
		return // a broken connection, not a broken agent
	}
	var reason string
	switch st, serr := d.Status(ctx, h); {
	case serr != nil || st.State != driver.Running:
		reason = "its agent is gone"
		if serr == nil && st.Detail != "" {
			reason = fmt.Sprintf("its agent is gone (%s)", st.Detail)
		}
	case errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("its agent did not answer within %s", agentHealthTimeout)
	default:
		reason = fmt.Sprintf("its agent does not answer (%v)", err)
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
