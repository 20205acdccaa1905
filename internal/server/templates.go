package server

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/server/config"
)

// openTemplates opens the template service and its layer store in
// <data>/layers, when the default driver starts sandboxes from images;
// otherwise there is none (nil), and a default template other than host
// stops the start.
func (s *Server) openTemplates(_ context.Context, p *parts) error {
	caps := p.drivers.Default().Capabilities()
	if !caps.Images {
		if s.cfg.DefaultTemplate != api.HostTemplate {
			return fmt.Errorf("default template %q: the default driver starts no sandbox from an image here", s.cfg.DefaultTemplate)
		}
		s.log.Info("templates: the default driver starts no sandbox from an image; only the host template is offered")
		return nil
	}
	svc, err := templates.New(templates.Config{
		Dir:            filepath.Join(s.cfg.DataDir, "layers"),
		Shared:         caps.SharedLayers,
		MaxUploadBytes: s.cfg.MaxImageBytes,
		MaxLayerBytes:  s.cfg.MaxImageBytes,
		Registries:     templates.RegistryPolicy{Insecure: s.cfg.RegistryInsecure},
		Storage:        p.storage,
		SnapshotDir:    snapshotDir(s.cfg),
		Disk:           p.disk,
		Node:           p.node,
		Quotas:         p.quotas,
	}, p.store, p.secrets, p.events, s.log)
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	mode := "each layer kept once, shared by every template"
	if !caps.SharedLayers {
		mode = "each template flattened into a tree of its own (layers are shared only as root)"
	}
	s.log.Info("templates: images unpacked into "+filepath.Join(s.cfg.DataDir, "layers"), "layers", mode)
	p.templates = svc
	return nil
}

// snapshotDir is where snapshots' files are.
func snapshotDir(cfg config.Config) string { return filepath.Join(cfg.DataDir, "snapshots") }
