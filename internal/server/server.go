// Package server wires hutch serve together: it builds every part in order,
// keeping a named closer for each, serves until its context ends, then
// drains the API and closes the parts in reverse. Sandboxes keep running
// across a restart; the next start re-attaches to them.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/auth"
	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/egress"
	"github.com/hutchdev/hutch/internal/httpapi"
	"github.com/hutchdev/hutch/internal/keyfile"
	"github.com/hutchdev/hutch/internal/router"
	"github.com/hutchdev/hutch/internal/sandbox"
	"github.com/hutchdev/hutch/internal/secrets"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/tenancy"
)

// Lifecycle loop periods.
const (
	reapEvery  = time.Second
	sweepEvery = time.Minute
)

// closer is one step of shutdown.
type closer struct {
	name string
	fn   func(context.Context) error
}

// Server is a running hutch serve.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	version string
	closers []closer
	addr    net.Addr
	// AdminKeyPath is where the first start wrote the admin key.
	AdminKeyPath string
}

// Start builds and starts every part. On error it closes whatever it had
// started. The caller ends the server with Shutdown.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger, version string) (_ *Server, retErr error) {
	s := &Server{cfg: cfg, log: log, version: version}
	defer func() {
		if retErr != nil {
			s.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	st, err := sqlite.Open(filepath.Join(cfg.DataDir, "hutch.db"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.onClose("store", func(context.Context) error { return st.Close() })
	// The secrets master key, early: a bad one stops the start at once.
	sealer, err := secrets.Load(ctx, st, os.Getenv(secrets.KeyEnv), cfg.DataDir, log)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}

	keyPath, created, err := auth.Bootstrap(tenancy.System(ctx), st, cfg.DataDir, log)
	if err != nil {
		return nil, fmt.Errorf("bootstrap admin: %w", err)
	}
	s.AdminKeyPath = keyPath
	if created {
		fmt.Fprintf(os.Stderr, "hutch: created the admin API key in %s (mode 0600); use it as 'Authorization: Bearer <key>'\n", keyPath)
	}

	drivers, why, closeDrivers, err := loadDrivers(ctx, cfg, driver.Registered(), log)
	if err != nil {
		return nil, err
	}
	s.onClose("drivers", func(context.Context) error { closeDrivers(); return nil })
	drv := drivers.Default()
	svc := sandbox.New(sandbox.Config{
		DefaultTemplate: "host",
		DefaultLimits:   cfg.DefaultLimits,
		MaxLimits:       cfg.MaxLimits,
		DefaultTimeout:  cfg.DefaultTimeout,
		MaxTimeout:      cfg.MaxTimeout,
		MaxFileBytes:    cfg.MaxFileBytes,
		MaxOutputBytes:  cfg.MaxOutputBytes,
		TeardownTimeout: cfg.TeardownTimeout,
		Egress:          &egress.Config{AllowPrivate: cfg.EgressAllowPrivate, Log: log},
	}, st, drv, log)
	// Secret events go through svc, which wakes the tenant's event streams.
	sec := secrets.New(secrets.Config{MaxValueBytes: cfg.MaxSecretBytes}, st, sealer, svc, log)
	gw, err := newGateway(cfg, st, sec, svc, log)
	if err != nil {
		return nil, err
	}
	s.onClose("provider gateway", func(context.Context) error { gw.Close(); return nil })
	svc.SetGateway(gw)
	if err := svc.Recover(ctx); err != nil {
		log.Warn("recovery was incomplete", "err", err)
	}
	s.onClose("process watchers", func(context.Context) error { svc.Close(); return nil })
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { svc.Run(loops, reapEvery, sweepEvery) })
	s.onClose("lifecycle loops", func(context.Context) error { stopLoops(); wg.Wait(); return nil })

	handler := httpapi.New(httpapi.Config{
		Sandboxes:    svc,
		Secrets:      sec,
		Store:        st,
		Auth:         &auth.Authenticator{Store: st},
		Log:          log,
		Version:      version,
		MaxBodyBytes: cfg.MaxBodyBytes,
		MaxTarBytes:  cfg.MaxTarBytes,
	})
	// Previews: a request for <port>-<sandbox id>.<preview domain> goes to
	// the router, which tunnels it through the sandbox's agent; the rest
	// to the API.
	previewKey, err := keyfile.Load(filepath.Join(cfg.DataDir, "preview.key"), router.KeyBytes)
	if err != nil {
		return nil, fmt.Errorf("preview key: %w", err)
	}
	previews, err := router.New(router.Config{Domain: cfg.PreviewDomain, PublicURL: cfg.PreviewURL, Key: previewKey, Sandboxes: st,
		Auth: &auth.Authenticator{Store: st}, Tunnels: router.AgentTunnels(svc), Events: svc, Log: log})
	if err != nil {
		return nil, fmt.Errorf("previews: %w", err)
	}
	s.onClose("preview tunnels", func(context.Context) error { previews.Close(); return nil })
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.addr = ln.Addr()
	srv := &http.Server{Handler: previews.Wrap(handler), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("api server stopped", "err", err)
		}
	}()
	// Closed first: stop accepting and drain in-flight requests.
	s.onClose("api", srv.Shutdown)

	caps := drv.Capabilities()
	fmt.Fprintf(os.Stderr, "hutch: sandboxes run on the %s driver, %s isolation (%s)\n", drv.Name(), caps.Isolation, why)
	log.Info("hutch serving", "addr", s.addr.String(), "version", version, "driver", drv.Name(),
		"driver.reason", why, "isolation", caps.Isolation, "data", cfg.DataDir)
	for _, d := range caps.Degraded {
		log.Warn("DEGRADED: "+d, "driver", drv.Name())
	}
	return s, nil
}

// Addr is the address the API listens on.
func (s *Server) Addr() net.Addr { return s.addr }

func (s *Server) onClose(name string, fn func(context.Context) error) {
	s.closers = append(s.closers, closer{name, fn})
}

// Shutdown closes every part in reverse order of start, each step logged,
// within the configured shutdown timeout.
func (s *Server) Shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	for i := len(s.closers) - 1; i >= 0; i-- {
		c := s.closers[i]
		start := time.Now()
		if err := c.fn(ctx); err != nil {
			s.log.Warn("shutdown step failed", "step", c.name, "err", err)
			continue
		}
		s.log.Info("shutdown step done", "step", c.name, "duration_ms", time.Since(start).Milliseconds())
	}
	s.closers = nil
}
