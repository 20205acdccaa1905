package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Preview is what the preview router needs of a sandbox to authorize and
// route a request to one of its ports (internal/edge/router): whose it
// is, the state it is in, and whether the port is public.
type Preview struct {
	TenantID string
	State    api.SandboxState
	// Public is set when the port's setting lets everyone in; a port
	// with no setting is private.
	Public bool
	// Node is the node that runs the sandbox: another node's preview is
	// forwarded there.
	Node string
}

// Reachable reports whether a request may go on to the sandbox's tunnel,
// whose dial passes the door (DialTunnel): the door lets a call through
// to a running sandbox, and resumes a paused one first.
func (p Preview) Reachable() bool { return reachable(p.State) }

// reachable reports whether a call through the door (open) may find a
// sandbox in state: running, or paused, which the door resumes first.
func reachable(state api.SandboxState) bool {
	return state == api.StateRunning || state == api.StatePaused
}

// Preview resolves a request to port of sandbox id for the router, which
// learns whose the sandbox is before it knows who calls: it reads as the
// system. A sandbox that does not exist is 404 sandbox_not_found; a port
// setting that cannot be read leaves the port private, and is logged.
func (s *Service) Preview(ctx context.Context, id string, port int) (Preview, error) {
	sys := tenancy.System(ctx)
	rec, err := s.store.GetSandbox(sys, id)
	if err != nil {
		return Preview{}, err
	}
	p := Preview{TenantID: rec.TenantID, State: rec.State, Node: rec.Node}
	setting, err := s.store.GetPort(sys, id, port)
	switch {
	case err == nil:
		p.Public = setting.Public
	case !errors.Is(err, errdefs.ErrNotFound):
		s.log.Warn("preview: read port setting", logattr.Sandbox(id), "port", port, "err", err)
	}
	return p, nil
}

// PortSetting is how the router exposes one port of a sandbox: to
// everyone, or (a port with no setting too) to its tenant.
type PortSetting struct {
	Port      int
	Public    bool
	UpdatedAt time.Time
}

// SetPort makes port of the caller's sandbox id public, or private again.
func (s *Service) SetPort(ctx context.Context, id string, port int, public bool) (PortSetting, error) {
	p := store.PortSetting{SandboxID: id, Port: port, Public: public}
	if err := s.store.SetPort(ctx, &p); err != nil {
		return PortSetting{}, err
	}
	return PortSetting{Port: p.Port, Public: p.Public, UpdatedAt: p.UpdatedAt}, nil
}

// Ports returns the settings of the caller's sandbox id's ports, in port
// order.
func (s *Service) Ports(ctx context.Context, id string) ([]PortSetting, error) {
	ps, err := s.store.ListPorts(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]PortSetting, len(ps))
	for i, p := range ps {
		out[i] = PortSetting{Port: p.Port, Public: p.Public, UpdatedAt: p.UpdatedAt}
	}
	return out, nil
}
