package server

import (
	"context"
	"log/slog"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// newSettings puts in force, over the flags' settings, those a PATCH
// /v1/settings kept in the store, and returns the service that changes
// them from then on. Call it before the sandbox service recovers or runs
// its loops, so both use the settings in force.
func newSettings(ctx context.Context, cfg config.Config, st store.Store, svc *sandbox.Service, events events.Appender, log *slog.Logger) (*settings.Service, error) {
	return settings.New(tenancy.System(ctx), settings.Config{
		Store:    st,
		Events:   events,
		Flags:    cfg.Settings(),
		ReadOnly: settings.ReadOnly(cfg),
		Check:    sandbox.CheckSettings,
		Apply:    svc.ApplySettings,
		Log:      log,
	})
}
