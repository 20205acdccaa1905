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

	"github.com/hutchdev/hutch/internal/base/connlimit"
	"github.com/hutchdev/hutch/internal/base/keyfile"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/policy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/edge/e2b"
	"github.com/hutchdev/hutch/internal/edge/egress"
	"github.com/hutchdev/hutch/internal/edge/gateway"
	"github.com/hutchdev/hutch/internal/edge/httpapi"
	"github.com/hutchdev/hutch/internal/edge/router"
	"github.com/hutchdev/hutch/internal/edge/telemetry"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/diskguard"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/server/config"
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
	// The listener first: a port in use is reported before anything is
	// made.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--listen): %w", cfg.Listen, err)
	}
	s.onClose("listener", func(context.Context) error { ln.Close(); return nil })
	s.addr = ln.Addr()
	metricsLn, err := s.listenMetrics()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	// The reserve first: the store spends it if sandbox data fills the
	// filesystem they share.
	disk := diskguard.New(diskguard.Config{Dir: cfg.DataDir, Reserve: cfg.DiskReserve,
		ReserveInodes: uint64(cfg.DiskReserveInodes), Log: log})
	if err := disk.Start(); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg, disk.Release)
	if err != nil {
		return nil, err
	}
	s.onClose("store", func(context.Context) error { return st.Close() })
	metrics, err := telemetry.New(telemetry.Config{Sandboxes: st, Log: log})
	if err != nil {
		return nil, err
	}
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
	node, err := nodeName(cfg.Node, cfg.DataDir)
	if err != nil {
		return nil, err
	}

	backend, storageInfo := probeStorage(cfg.DataDir, log)
	drivers, why, closeDrivers, err := loadDrivers(ctx, cfg, driver.Registered(), backend, log)
	if err != nil {
		return nil, err
	}
	s.onClose("drivers", func(context.Context) error { closeDrivers(); return nil })
	evlog := events.New(st, events.Config{Retention: cfg.EventRetention, MaxPerTenant: cfg.EventMaxPerTenant, Log: log})
	sec := secrets.New(secrets.Config{MaxValueBytes: cfg.MaxSecretBytes}, st, sealer, evlog, log)
	gw, err := newGateway(cfg, st, sec, evlog, metrics, log)
	if err != nil {
		return nil, err
	}
	s.onClose("provider gateway", func(context.Context) error { gw.Close(); return nil })
	tmpls, err := newTemplates(cfg, drivers.Default().Capabilities(), backend, disk, st, sec, evlog, log)
	if err != nil {
		return nil, err
	}
	vols, err := newVolumes(cfg, drivers.Default().Capabilities(), backend, st, evlog, log)
	if err != nil {
		return nil, err
	}
	// A nil *Service must not become a non-nil interface.
	var svcTemplates sandbox.Templates
	if tmpls != nil {
		svcTemplates = tmpls
	}
	var svcVolumes sandbox.Volumes
	if vols != nil {
		svcVolumes = vols
	}
	capacity, err := hostCapacity(cfg, log)
	if err != nil {
		return nil, err
	}
	svc, err := sandbox.New(sandbox.Config{
		Store:              st,
		Drivers:            drivers,
		Events:             evlog,
		Gateway:            gw,
		Log:                log,
		Node:               node,
		DefaultTemplate:    cfg.DefaultTemplate,
		Templates:          svcTemplates,
		Volumes:            svcVolumes,
		SnapshotDir:        snapshotDir(cfg),
		DefaultLimits:      cfg.DefaultLimits,
		MaxLimits:          cfg.MaxLimits,
		Settings:           cfg.Settings(),
		MaxFileBytes:       cfg.MaxFileBytes,
		MaxTarBytes:        cfg.MaxTarBytes,
		MaxOutputBytes:     cfg.MaxOutputBytes,
		MaxCallsPerSandbox: cfg.MaxCallsPerSandbox,
		TeardownTimeout:    cfg.TeardownTimeout,
		Egress: &egress.Proxies{Config: &egress.Config{AllowPrivate: cfg.EgressAllowPrivate, Observer: metrics, Log: log,
			Local: gw.ForSandbox, LocalPrefix: gateway.Prefix}},
		Observer:     metrics,
		Disk:         disk,
		Sealer:       sealer,
		Capacity:     capacity,
		TenantQuotas: cfg.TenantQuotas,
	})
	if err != nil {
		return nil, err
	}
	set, err := newSettings(ctx, cfg, st, svc, evlog, log)
	if err != nil {
		return nil, err
	}
	if err := svc.Recover(ctx); err != nil {
		log.Warn("recovery was incomplete", "err", err)
	}
	s.onClose("process watchers", func(context.Context) error { svc.Close(); return nil })
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	policies := policy.New(svc, policy.Config{Tick: reapEvery, SweepEvery: sweepEvery, Log: log})
	wg.Go(func() { policies.Run(loops) })
	wg.Go(func() { evlog.Run(loops) })
	s.onClose("lifecycle loops", func(context.Context) error { stopLoops(); wg.Wait(); return nil })

	// Previews: a request for <port>-<sandbox id>.<preview domain> goes to
	// the router, which tunnels it through the sandbox service; the rest
	// to the API.
	previewKey, err := keyfile.Load(filepath.Join(cfg.DataDir, "preview.key"), router.KeyBytes)
	if err != nil {
		return nil, fmt.Errorf("preview key: %w", err)
	}
	// One authenticator for both doors that take API keys, so that
	// revoking a key through the API ends its previews' requests too.
	authn := &auth.Authenticator{Store: st, Log: log}
	appSvc, err := newApps(ctx, cfg, st, svc, sealer, evlog, s.addr, log)
	if err != nil {
		return nil, err
	}
	s.onClose("apps", func(context.Context) error { appSvc.Close(); return nil })
	previews, err := router.New(router.Config{Domain: cfg.PreviewDomain, PublicURL: cfg.PreviewURL, Key: previewKey, Sandboxes: st,
		Auth: authn, Tunnels: svc, Events: evlog, Log: log, Apps: appSvc, AppsDomain: appSvc.Domain()})
	if err != nil {
		return nil, fmt.Errorf("previews: %w", err)
	}
	s.onClose("preview tunnels", func(context.Context) error { previews.Close(); return nil })
	handler := httpapi.New(httpapi.Config{
		Sandboxes:    svc,
		Events:       evlog.Notifier(),
		Previews:     previews,
		Secrets:      sec,
		Templates:    tmpls,
		Volumes:      vols,
		Settings:     set,
		Apps:         appSvc,
		Store:        st,
		Auth:         authn,
		Log:          log,
		Version:      version,
		StoreName:    cfg.Store,
		Storage:      storageInfo,
		MaxBodyBytes: cfg.MaxBodyBytes,
		MaxTarBytes:  cfg.MaxTarBytes,
		Metrics:      metrics,
	})
	e2bKey, err := keyfile.Load(filepath.Join(cfg.DataDir, "e2b.key"), router.KeyBytes)
	if err != nil {
		return nil, fmt.Errorf("e2b key: %w", err)
	}
	compat := e2b.New(e2b.Config{Sandboxes: svc, Auth: authn, Keys: tenantKeys{st}, Key: e2bKey, Domain: cfg.PreviewDomain,
		MaxBodyBytes: cfg.MaxBodyBytes, Log: log})
	s.onClose("e2b watchers", func(context.Context) error { compat.Close(); return nil })
	// Closed right after the listener's server: the API's WebSocket
	// handlers, which its Shutdown does not wait for, end before what
	// they use closes.
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
	s.serve(ln, withE2B(compat, cfg.PreviewDomain, previews.Wrap, handler))
	s.serveMetrics(metricsLn, metrics)

	caps := drivers.Default().Capabilities()
	fmt.Fprintf(os.Stderr, "hutch: sandboxes run on the %s driver, %s isolation (%s)\n", drivers.Default().Name(), caps.Isolation, why)
	base := "http://" + s.addr.String()
	fmt.Fprintf(os.Stderr, "hutch: for the E2B SDK: E2B_API_URL=%s%s E2B_SANDBOX_URL=%s%s/envd E2B_API_KEY=<a hutch key> (docs/E2B.md)\n",
		base, e2b.Prefix, base, e2b.Prefix)
	log.Info("hutch serving", "addr", s.addr.String(), "version", version, "node", node, "driver", drivers.Default().Name(),
		"driver.reason", why, "isolation", caps.Isolation, "drivers", drivers.Names(), "data", cfg.DataDir)
	for _, d := range caps.Degraded {
		log.Warn("DEGRADED: "+d, "driver", drivers.Default().Name())
	}
	for name, err := range drivers.Missing() {
		log.Warn("driver not loaded: its sandboxes are unavailable", "driver", name, "err", err)
	}
	return s, nil
}

// hostCapacity is what this host may promise its sandboxes together,
// from its memory, pid_max, threads-max and CPUs (hostinfo) and the
// reserves and overcommit factors of cfg.
func hostCapacity(cfg config.Config, log *slog.Logger) (sandbox.Capacity, error) {
	facts, err := hostinfo.Read()
	if err != nil {
		return sandbox.Capacity{}, fmt.Errorf("host capacity: %w", err)
	}
	c := sandbox.HostCapacity(facts, sandbox.HostLimits{
		ReserveMemoryMB:  cfg.ReserveMemoryMB,
		ReservePids:      cfg.ReservePids,
		MemoryOvercommit: cfg.MaxMemoryOvercommit,
		PidsOvercommit:   cfg.MaxPidsOvercommit,
		CPUOvercommit:    cfg.MaxCPUOvercommit,
	})
	log.Info("host capacity for sandboxes (0: no bound)", "memory_mb", c.MemoryMB, "cpu", c.CPU, "pids", c.Pids,
		"host.memory_mb", facts.MemoryMB, "host.pid_max", facts.PidMax, "host.threads_max", facts.ThreadsMax, "host.cpus", facts.CPUs,
		"tenant.default_quotas", fmt.Sprintf("%+v", cfg.TenantQuotas))
	return c, nil
}

// serve answers on ln. Every request's context is derived from one drain
// context, the server's base: shutdown cancels it first, so every stream
// (SSE, WebSocket, watch, terminal, proxied upgrade) ends at once, and then
// waits for the handlers to return.
func (s *Server) serve(ln net.Listener, h http.Handler) {
	drain, cancel := context.WithCancel(context.Background())
	ln = connlimit.New(ln, s.cfg.MaxConnsPerClient, s.log)
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
	s.serveHTTP("api", srv, ln, cancel)
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

// Addr is the address the API listens on.
func (s *Server) Addr() net.Addr { return s.addr }

func (s *Server) onClose(name string, fn func(context.Context) error) {
	s.closers = append(s.closers, closer{name, fn})
}

// Shutdown closes every part in reverse order of start, each step logged
// and bounded by the shutdown timeout of its own, so one slow step never
// leaves the next an expired context.
func (s *Server) Shutdown(ctx context.Context) {
	for i := len(s.closers) - 1; i >= 0; i-- {
		c := s.closers[i]
		start := time.Now()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		err := c.fn(sctx)
		cancel()
		if err != nil {
			s.log.Warn("shutdown step failed", "step", c.name, "err", err)
			continue
		}
		s.log.Info("shutdown step done", "step", c.name, "duration_ms", time.Since(start).Milliseconds())
	}
	s.closers = nil
}
