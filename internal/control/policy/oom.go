package policy

import (
	"context"

	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// watchOOM reads the out-of-memory kills of every running sandbox, so
// that kills of background processes nobody waited for are reported too
// (sandbox.ObserveOOM records sandbox.oom when the count grew).
func watchOOM(ctx context.Context, svc *sandbox.Service, running []*store.Sandbox) {
	for _, rec := range running {
		svc.ObserveOOM(ctx, rec)
	}
}
