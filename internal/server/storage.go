package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
)

// probeStorage says what the data directory's filesystem offers sandboxes'
// storage (snapshots, disk quotas), trying it in a scratch directory of
// the data directory that it removes; it changes nothing else (quotas are
// read, never enabled). It returns the backend that keeps sandboxes'
// files there and what /v1/info says of it; nil and nil when the probe
// fails, which is logged (each driver then probes its own directory).
func probeStorage(dataDir string, log *slog.Logger) (storage.Backend, *api.StorageInfo) {
	scratch := filepath.Join(dataDir, ".storage-probe")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		log.Warn("storage probe", "err", err)
		return nil, nil
	}
	defer os.RemoveAll(scratch)
	info, err := storage.Probe(dataDir, scratch)
	if err != nil {
		log.Warn("storage probe", "err", err)
		return nil, nil
	}
	for _, n := range info.Notes {
		log.Debug("storage probe", "note", n)
	}
	fmt.Fprintf(os.Stderr, "hutch: storage: %s\n", info)
	return storage.Open(info), &api.StorageInfo{
		Backend:      string(info.Kind),
		Filesystem:   info.Filesystem,
		Snapshot:     string(info.Snapshot),
		Quota:        string(info.Quota.Mechanism),
		QuotaEnabled: info.Quota.Enabled,
		Degraded:     info.Degraded,
	}
}
