package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// PortSetting is how the router exposes one port of a sandbox. A port with
// no setting is private.
type PortSetting struct {
	SandboxID string
	TenantID  string
	Port      int // 1 to 65535
	Public    bool
	UpdatedAt time.Time
}

// Ports keeps port settings, scoped to the caller's tenant like every
// part of the Store: the sandbox service reads them as the system to
// route a preview.
type Ports interface {
	// SetPort creates or replaces the setting of a port of one of the
	// caller's tenant's sandboxes, setting p.TenantID and, if zero,
	// p.UpdatedAt. Another tenant's sandbox is SandboxNotFound.
	SetPort(ctx context.Context, p *PortSetting) error
	// GetPort returns a port's setting; PortNotFound when it has none.
	GetPort(ctx context.Context, sandboxID string, port int) (PortSetting, error)
	// ListPorts returns a sandbox's port settings in port order.
	// Another tenant's sandbox is SandboxNotFound.
	ListPorts(ctx context.Context, sandboxID string) ([]PortSetting, error)
}

// PortNotFound is the answer for a port that has no setting.
func PortNotFound(sandboxID string, port int) error {
	return errdefs.NotFound("port_not_found", "port %d of sandbox %q has no setting", port, sandboxID)
}

// CheckPort validates p and normalises its time, setting UpdatedAt to now if
// zero.
func CheckPort(p *PortSetting) error {
	if p.SandboxID == "" {
		return errdefs.Invalid("invalid_port", "a port setting needs a sandbox")
	}
	if p.Port < 1 || p.Port > 65535 {
		return errdefs.Invalid("invalid_port", "port %d is not from 1 to 65535", p.Port)
	}
	p.UpdatedAt = orNow(p.UpdatedAt)
	return nil
}
