package server

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/diskguard"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// newTemplates opens the template service and its layer store in
// <data>/layers, when the default driver starts sandboxes from images;
// otherwise there is none (nil), and a default template other than host
// stops the start.
func newTemplates(cfg config.Config, caps driver.Capabilities, backend storage.Backend, disk *diskguard.Guard, st store.Store, sec templates.Revealer, events events.Appender, log *slog.Logger) (*templates.Service, error) {
	if !caps.Images {
		if cfg.DefaultTemplate != api.HostTemplate {
			return nil, fmt.Errorf("default template %q: the default driver starts no sandbox from an image here", cfg.DefaultTemplate)
		}
		log.Info("templates: the default driver starts no sandbox from an image; only the host template is offered")
		return nil, nil
	}
	svc, err := templates.New(templates.Config{
		Dir:            filepath.Join(cfg.DataDir, "layers"),
		Shared:         caps.SharedLayers,
		MaxUploadBytes: cfg.MaxImageBytes,
		MaxLayerBytes:  cfg.MaxImageBytes,
		Registries:     templates.RegistryPolicy{Insecure: cfg.RegistryInsecure},
		Storage:        backend,
		SnapshotDir:    snapshotDir(cfg),
		Disk:           disk,
	}, st, sec, events, log)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	mode := "each layer kept once, shared by every template"
	if !caps.SharedLayers {
		mode = "each template flattened into a tree of its own (layers are shared only as root)"
	}
	log.Info("templates: images unpacked into "+filepath.Join(cfg.DataDir, "layers"), "layers", mode)
	return svc, nil
}

// snapshotDir is where snapshots' files are.
func snapshotDir(cfg config.Config) string { return filepath.Join(cfg.DataDir, "snapshots") }
