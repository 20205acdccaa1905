package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// Appender records events: a Log, which also wakes the tenant's event
// streams and holds each sandbox to its budget.
type Appender interface {
	AppendEvent(ctx context.Context, e *Event) error
}

var _ Appender = (*Log)(nil)

// recordTimeout bounds recording an event after the work it tells of.
const recordTimeout = 10 * time.Second

// Record appends e in its own tenant (e.TenantID) on a context of its
// own, for work that happened outside any request of that tenant's, and
// logs a failure: an event that cannot be recorded never fails the work.
func Record(a Appender, log *slog.Logger, e *Event) {
	ctx, cancel := context.WithTimeout(tenancy.With(context.Background(), tenancy.Principal{TenantID: e.TenantID}), recordTimeout)
	defer cancel()
	if err := a.AppendEvent(ctx, e); err != nil {
		log.Error("record event", logattr.Sandbox(e.SandboxID), logattr.Tenant(e.TenantID), "event.type", e.Type, "err", err)
	}
}
