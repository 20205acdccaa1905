package server

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/base/keyfile"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/router"
)

// openPreviewKey loads the key that signs preview URLs and cookies
// (<data>/preview.key), made on the first start; in a fleet, the key
// every node derives from the cluster key, so that a URL or cookie one
// node made is good on any.
func (s *Server) openPreviewKey(_ context.Context, p *parts) (err error) {
	if p.forwarding && p.clusterKey != nil {
		p.previewKey = forward.DeriveKey(p.clusterKey, "preview")
		return nil
	}
	if p.previewKey, err = keyfile.Load(filepath.Join(s.cfg.DataDir, "preview.key"), router.KeyBytes); err != nil {
		return fmt.Errorf("preview key: %w", err)
	}
	return nil
}

// openPreviews builds the router: a request for <port>-<sandbox
// id>.<preview domain> goes to it, which tunnels it through the sandbox
// service, and so does one for an app's host; the rest goes to the API.
func (s *Server) openPreviews(_ context.Context, p *parts) error {
	previews, err := router.New(router.Config{Domain: s.cfg.PreviewDomain, PublicURL: s.cfg.PreviewURL, Key: p.previewKey,
		Sandboxes: p.sandboxes, Auth: p.auth, Tunnels: p.sandboxes, Events: p.events, Log: s.log, Apps: p.apps, AppsDomain: p.apps.Domain(),
		Forward: p.forwarder()})
	if err != nil {
		return fmt.Errorf("previews: %w", err)
	}
	s.onClose("preview tunnels", func(context.Context) error { previews.Close(); return nil })
	p.previews = previews
	return nil
}
