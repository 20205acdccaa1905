package policy

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// expiry ends each sandbox's life when its timeout does (what its
// on_expiry asks: destroy, stop or pause), and, once for each expiry,
// warns within the settings' expiry_warning_s of it.
type expiry struct {
	svc *sandbox.Service
	log *slog.Logger
	// warned: sandbox id → the expiry its sandbox.expiring event was for,
	// of the sandboxes within their warning now.
	warned map[string]time.Time
}

// tick acts on recs, the running and stopped sandboxes.
func (p *expiry) tick(ctx context.Context, now time.Time, recs []*store.Sandbox) {
	warned := map[string]time.Time{}
	for _, rec := range recs {
		switch {
		case rec.ExpiresAt == nil:
		case rec.ExpiresAt.After(now):
			p.warn(ctx, rec, now, warned)
		default:
			p.svc.Expire(ctx, rec.ID, now)
		}
	}
	p.warned = warned
}

// expiryDone says what an expiry does to a sandbox, for people.
var expiryDone = map[string]string{api.OnExpiryDestroy: "destroyed", api.OnExpiryStop: "stopped", api.OnExpiryPause: "paused"}

// warn records sandbox.expiring once for a running sandbox that expires
// within the server's warning time (once for each expiry: a new lifetime
// earns a new warning), and keeps it in warned.
func (p *expiry) warn(ctx context.Context, rec *store.Sandbox, now time.Time, warned map[string]time.Time) {
	warning := time.Duration(p.svc.Settings().ExpiryWarningS) * time.Second
	if warning <= 0 || rec.State != api.StateRunning || rec.ExpiresAt.Sub(now) > warning {
		return
	}
	warned[rec.ID] = *rec.ExpiresAt
	if p.warned[rec.ID].Equal(*rec.ExpiresAt) {
		return
	}
	action := cmp.Or(rec.OnExpiry, api.OnExpiryDestroy)
	left := rec.ExpiresAt.Sub(now).Round(time.Second)
	p.svc.Emit(ctx, rec, api.EventSandboxExpiring,
		fmt.Sprintf("the sandbox's timeout ends in %s; then it is %s (POST /v1/sandboxes/%s/timeout gives it more)", left, expiryDone[action], rec.ID),
		map[string]any{"expires_at": rec.ExpiresAt.UTC().Format(time.RFC3339), "on_expiry": action})
}
