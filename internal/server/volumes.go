package server

import (
	"log/slog"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/storage"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/volumes"
)

// newVolumes opens the volume service in <data>/volumes when the default
// driver mounts volumes and the data directory's storage was probed;
// otherwise there is none (nil).
func newVolumes(cfg config.Config, caps driver.Capabilities, backend storage.Backend, st store.Store, events store.EventAppender, log *slog.Logger) (*volumes.Service, error) {
	if !caps.Volumes || backend == nil {
		log.Info("volumes: none on this server (the default driver mounts none, or the data directory's storage was not probed)")
		return nil, nil
	}
	return volumes.New(filepath.Join(cfg.DataDir, "volumes"), backend, st, events, log)
}
