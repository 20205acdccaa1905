package sandbox

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/store"
)

// emit records an event about rec in its tenant's log. It runs on a context
// that outlives ctx, so a request cancelled after the work was done still
// records it, and it never fails the operation: an event that cannot be
// stored is logged. msg must be safe to show the sandbox's owner. The
// tenant's event streams are woken (events.Log).
func (s *Service) emit(ctx context.Context, rec *store.Sandbox, typ, msg string, data map[string]any) {
	ctx, cancel := s.teardownContext(ctx)
	defer cancel()
	e := &events.Event{
		TenantID:  rec.TenantID,
		SandboxID: rec.ID,
		Type:      typ,
		Message:   msg,
		Data:      data,
	}
	if err := s.events.AppendEvent(ctx, e); err != nil {
		s.log.Error("record event", logattr.Sandbox(rec.ID), logattr.Tenant(rec.TenantID), "event.type", typ, "err", err)
	}
}

// Emit records an event about rec as the service's own are (emit): for
// the lifecycle policies, which act through the service.
func (s *Service) Emit(ctx context.Context, rec *store.Sandbox, typ, msg string, data map[string]any) {
	s.emit(ctx, rec, typ, msg, data)
}

func (s *Service) emitCreated(ctx context.Context, rec *store.Sandbox) {
	s.emit(ctx, rec, api.EventSandboxCreated, "sandbox created",
		map[string]any{"template": rec.Template, "driver": rec.Driver})
}

// emitFailed records why a sandbox failed; reason is the user-safe message
// also kept in the sandbox's error.
func (s *Service) emitFailed(ctx context.Context, rec *store.Sandbox, reason string) {
	s.emit(ctx, rec, api.EventSandboxFailed, "sandbox failed: "+reason, map[string]any{"reason": reason})
}

// emitAvailable records that rec, unavailable while its node was lost,
// is this node's again; how says what brought it back.
func (s *Service) emitAvailable(ctx context.Context, rec *store.Sandbox, how string) {
	s.emit(ctx, rec, api.EventSandboxAvailable, "sandbox available: its node "+s.cfg.Node+" "+how,
		map[string]any{"node": s.cfg.Node})
}

func (s *Service) emitExpired(ctx context.Context, rec *store.Sandbox) {
	s.emit(ctx, rec, api.EventSandboxExpired, fmt.Sprintf("sandbox expired after its timeout of %d s", rec.TimeoutS),
		map[string]any{"timeout_s": rec.TimeoutS})
}
