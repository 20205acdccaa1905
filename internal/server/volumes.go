package server

import (
	"log/slog"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/volumes"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// newVolumes opens the volume service in <data>/volumes when the default
// driver mounts volumes and the data directory's storage was probed;
// otherwise there is none (nil).
func newVolumes(cfg config.Config, caps driver.Capabilities, backend storage.Backend, st store.Store, events events.Appender, log *slog.Logger) (*volumes.Service, error) {
	if !caps.Volumes || backend == nil {
		log.Info("volumes: none on this server (the default driver mounts none, or the data directory's storage was not probed)")
		return nil, nil
	}
	return volumes.New(filepath.Join(cfg.DataDir, "volumes"), backend, st, events, log)
}
