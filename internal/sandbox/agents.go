package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agentclient"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// Agent returns the client of a running sandbox of the caller's tenant:
// the way to exec and reach files. Another tenant's sandbox is not found;
// one that is not running is a conflict.
func (s *Service) Agent(ctx context.Context, id string) (*agentclient.Client, error) {
	_, c, err := s.running(ctx, id)
	return c, err
}

// running returns a running sandbox's record and its agent's client.
func (s *Service) running(ctx context.Context, id string) (*store.Sandbox, *agentclient.Client, error) {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if rec.State != api.StateRunning {
		return nil, nil, errdefs.Conflict("sandbox_not_running", "sandbox %s is %s, not running", id, rec.State)
	}
	s.mu.Lock()
	c, ok := s.agents[id]
	s.mu.Unlock()
	if ok {
		return rec, c, nil
	}
	h, err := decodeHandle(rec.Handle)
	if err != nil {
		return nil, nil, err
	}
	return rec, s.setAgent(id, h), nil
}

func (s *Service) setAgent(id string, h driver.Handle) *agentclient.Client {
	c := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token)
	s.mu.Lock()
	if old, ok := s.agents[id]; ok {
		old.Close()
	}
	s.agents[id] = c
	s.mu.Unlock()
	return c
}

func (s *Service) dropAgent(id string) {
	s.detachEgress(id)
	s.mu.Lock()
	if c, ok := s.agents[id]; ok {
		c.Close()
		delete(s.agents, id)
	}
	s.mu.Unlock()
}
