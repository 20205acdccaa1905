package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/internal/control/placement"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/httpapi"
	"github.com/hutchdev/hutch/internal/edge/peer"
)

// openAPI builds the /v1 handler. Its closer waits for the API's
// WebSocket handlers, which the HTTP server's Shutdown does not: it runs
// right after the listener's server closes, so they end before what they
// use closes.
func (s *Server) openAPI(_ context.Context, p *parts) error {
	cfg := s.cfg
	handler := httpapi.New(httpapi.Config{
		Sandboxes:    p.sandboxes,
		Events:       p.events,
		Previews:     p.previews,
		Secrets:      p.secrets,
		Templates:    p.templates,
		Volumes:      p.volumes,
		Settings:     p.settings,
		Nodes:        p.nodes,
		Apps:         p.apps,
		Auth:         p.auth,
		Tenants:      p.tenants,
		Quotas:       p.quotas,
		Log:          s.log,
		Version:      s.version,
		StoreName:    cfg.Store,
		Storage:      p.storageInfo,
		MaxBodyBytes: cfg.MaxBodyBytes,
		MaxTarBytes:  cfg.MaxTarBytes,
		Metrics:      p.metrics,
		Forward:      p.forwarder(),
		Placement:    p.placement(),
	})
	s.onClose("api streams", func(ctx context.Context) error {
		done := make(chan struct{})
		go func() {
			handler.Wait()
			close(done)
		}()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("API streams still running: %w", ctx.Err())
		}
	})
	p.api = handler
	return nil
}

// forwarder is the forwarder when other nodes' sandboxes are forwarded
// to them, nil when every sandbox is this node's.
func (p *parts) forwarder() *forward.Forwarder {
	if !p.forwarding {
		return nil
	}
	return p.forward
}

// placement places creates on the fleet's nodes when other nodes'
// sandboxes are forwarded to them, nil when every sandbox is this node's
// or no create could be forwarded (no cluster key): this node then makes
// every create it receives, or refuses it as it would alone (draining,
// full).
func (p *parts) placement() httpapi.Placement {
	if !p.forwarding || p.clusterKey == nil {
		return nil
	}
	return &placement.Placer{Nodes: p.store, Self: p.node}
}

// serveAll serves the API, previews, apps and the E2B layer on the API's
// listener, and the metrics on theirs.
func (s *Server) serveAll(_ context.Context, p *parts) error {
	// A nil *Service must not become a non-nil interface.
	var blobs peer.Blobs
	if p.templates != nil {
		blobs = p.templates
	}
	s.serve(p.ln, p.forward.Accept(peer.Mount(withE2B(p.e2b, s.cfg.PreviewDomain, p.previews.Wrap, p.api), blobs, s.log)))
	s.serveMetrics(p.metricsLn, p.metrics)
	return nil
}

// serve answers on ln. Every request's context is derived from one drain
// context, the server's base: shutdown cancels it first, so every stream
// (SSE, WebSocket, watch, terminal, proxied upgrade) ends at once, and then
// waits for the handlers to return.
func (s *Server) serve(ln net.Listener, h http.Handler) {
	drain, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Lifted by the routes that stream or transfer (httpapi's long
		// routes, previews).
		ReadTimeout:  s.cfg.RequestTimeout,
		WriteTimeout: s.cfg.RequestTimeout,
		IdleTimeout:  s.cfg.IdleTimeout,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:  func(net.Listener) context.Context { return drain },
	}
	// Closed first: stop accepting, end the streams, wait for the rest.
	s.serveHTTP("api", srv, s.limitConns(ln, srv), cancel)
}

// serveHTTP serves srv on ln until shutdown. Its closer, name, first runs
// before (nil: nothing; the API ends its requests' context there), then
// shuts srv down and waits for Serve to return.
func (s *Server) serveHTTP(name string, srv *http.Server, ln net.Listener, before func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error(name+" server stopped", "err", err)
		}
	}()
	s.onClose(name, func(ctx context.Context) error {
		if before != nil {
			before()
		}
		err := srv.Shutdown(ctx)
		if err != nil {
			srv.Close()
		}
		<-done
		return err
	})
}
