package policy

import (
	"context"
	"log/slog"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// watchOOM reads the out-of-memory kills of every running sandbox, so
// that kills of background processes nobody waited for are reported too
// (sandbox.ObserveOOM records sandbox.oom when the count grew).
func watchOOM(ctx context.Context, svc *sandbox.Service, log *slog.Logger) {
	recs, err := svc.Owned(ctx, api.StateRunning)
	if err != nil {
		log.Warn("watch oom", "err", err)
		return
	}
	for _, rec := range recs {
		svc.ObserveOOM(ctx, rec)
	}
}
