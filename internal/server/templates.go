package server

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/edge/peer"
	"github.com/hutchdev/hutch/internal/server/config"
)

// openTemplates opens the template service and its layer store in
// <data>/layers, when the default driver starts sandboxes from images;
// otherwise there is none (nil), and a default template other than host
// stops the start.
func (s *Server) openTemplates(ctx context.Context, p *parts) error {
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
		Quotas:         p.quotas,
		Node:           p.node,
		Peers:          templatePeers(p),
		FetchTimeout:   s.cfg.TemplateFetchTimeout,
	}, p.store, p.secrets, p.events, s.log)
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	if p.forwarding {
		// A template deleted through another node: this node's copy of
		// its layers goes at the next collection here.
		loop, stop := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		wg.Go(func() { svc.Run(loop, s.cfg.TemplateCollectEvery) })
		s.onClose("template collection", func(context.Context) error { stop(); wg.Wait(); return nil })
	}
	mode := "each layer kept once, shared by every template"
	if !caps.SharedLayers {
		mode = "each template flattened into a tree of its own (layers are shared only as root)"
	}
	s.log.Info("templates: images unpacked into "+filepath.Join(s.cfg.DataDir, "layers"), "layers", mode)
	p.templates = svc
	return nil
}

// templatePeers fetches a template's layers from the node that holds
// them, when other nodes are reached (a shared store and a cluster key);
// nil otherwise.
func templatePeers(p *parts) templates.Peers {
	if !p.forwarding || p.clusterKey == nil {
		return nil
	}
	return peer.Client{Forward: p.forward}
}

// snapshotDir is where snapshots' files are.
func snapshotDir(cfg config.Config) string { return filepath.Join(cfg.DataDir, "snapshots") }
