package server

import (
	"context"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/control/volumes"
)

// openVolumes opens the volume service in <data>/volumes when the default
// driver mounts volumes and the data directory's storage was probed;
// otherwise there is none (nil).
func (s *Server) openVolumes(_ context.Context, p *parts) (err error) {
	if !p.drivers.Default().Capabilities().Volumes || p.storage == nil {
		s.log.Info("volumes: none on this server (the default driver mounts none, or the data directory's storage was not probed)")
		return nil
	}
	p.volumes, err = volumes.New(filepath.Join(s.cfg.DataDir, "volumes"), p.storage, p.store, p.quotas, p.events, s.log, p.node)
	return err
}
