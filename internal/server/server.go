// Package server wires hutch serve together: it builds every part in order,
// keeping a named closer for each, serves until its context ends, then
// drains the API and closes the parts in reverse. Sandboxes keep running
// across a restart; the next start re-attaches to them.
//
// Each part is built by one function of its own (listen, openStore, ...),
// from the parts built before it; a part that holds anything open appends
// its closer as soon as it has opened, so a start that fails part way
// closes exactly what it had opened.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/nodes"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/control/tenants"
	"github.com/hutchdev/hutch/internal/control/volumes"
	"github.com/hutchdev/hutch/internal/edge/e2b"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/gateway"
	"github.com/hutchdev/hutch/internal/edge/httpapi"
	"github.com/hutchdev/hutch/internal/edge/router"
	"github.com/hutchdev/hutch/internal/edge/telemetry"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/diskguard"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
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

// parts are what Start builds, in the order of their fields; each
// function that builds one reads those above it.
type parts struct {
	ln, metricsLn net.Listener // metricsLn nil: no --metrics-listen
	disk          *diskguard.Guard
	store         store.Store
	quotas        *quota.Service
	events        *events.Log
	directory     *sandbox.Directory // sandboxes' owners, for the parts built before the service
	metrics       *telemetry.Metrics
	sealer        *secrets.Sealer
	secrets       *secrets.Service
	auth          *auth.Authenticator
	node          string
	forward       *forward.Forwarder
	forwarding    bool             // the store is shared: other nodes' sandboxes are forwarded to them
	clusterKey    []byte           // nil: none
	storage       storage.Backend  // nil: the probe failed
	storageInfo   *api.StorageInfo // nil: the probe failed
	drivers       *driver.Set
	driversWhy    string // why the default driver was chosen
	gateway       *gateway.Gateway
	templates     *templates.Service // nil: the default driver starts no image
	volumes       *volumes.Service   // nil: no volumes here
	sandboxes     *sandbox.Service
	nodes         *nodes.Node
	settings      *settings.Service
	previewKey    []byte
	apps          *apps.Service
	tenants       *tenants.Service
	previews      *router.Router
	e2b           *e2b.Handler
	api           *httpapi.API
}

// Start builds and starts every part, in order. On error it closes
// whatever it had opened, in reverse. The caller ends the server with
// Shutdown.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger, version string) (_ *Server, retErr error) {
	s := &Server{cfg: cfg, log: log, version: version}
	defer func() {
		if retErr != nil {
			s.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	var p parts
	for _, open := range []func(context.Context, *parts) error{
		s.listen,      // first: a port in use fails the start before anything is made
		s.openDataDir, // and its disk reserve, before the store that spends it
		s.openStore,
		s.openQuotas,
		s.openMetrics,
		s.openSecrets, // early: a bad master key stops the start at once
		s.openAuth,
		s.openNode,
		s.openForward,
		s.openDrivers,
		s.openGateway,
		s.openTemplates,
		s.openVolumes,
		s.openSandboxes,
		s.followChanges, // before anything keeps a record or serves a request
		s.openSettings,  // before the sandboxes recover, so both use the settings in force
		s.openNodes,     // before the sandboxes recover: a node recovering is not lost to the others
		s.runSandboxes,
		s.openPreviewKey,
		s.openApps,
		s.openTenants, // last of the control tier: a deletion reaches every part above
		s.openPreviews,
		s.openE2B,
		s.openAPI,
		s.serveAll,
	} {
		if err := open(ctx, &p); err != nil {
			return nil, err
		}
	}
	s.announce(&p)
	return s, nil
}

// listen opens the API's listener and the metrics' own.
func (s *Server) listen(_ context.Context, p *parts) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (--listen): %w", s.cfg.Listen, err)
	}
	s.onClose("listener", func(context.Context) error { ln.Close(); return nil })
	p.ln, s.addr = ln, ln.Addr()
	p.metricsLn, err = s.listenMetrics()
	return err
}

// openDataDir makes the data directory and keeps its disk reserve: a
// ballast the store spends if sandbox data fills the filesystem they
// share.
func (s *Server) openDataDir(_ context.Context, p *parts) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	p.disk = diskguard.New(diskguard.Config{Dir: s.cfg.DataDir, Reserve: s.cfg.DiskReserve,
		ReserveInodes: uint64(s.cfg.DiskReserveInodes), Log: s.log})
	return p.disk.Start()
}

// announce says what the server runs on and where the E2B SDK finds it.
func (s *Server) announce(p *parts) {
	def := p.drivers.Default()
	caps := def.Capabilities()
	fmt.Fprintf(os.Stderr, "hutch: sandboxes run on the %s driver, %s isolation (%s)\n", def.Name(), caps.Isolation, p.driversWhy)
	base := "http://" + s.addr.String()
	fmt.Fprintf(os.Stderr, "hutch: for the E2B SDK: E2B_API_URL=%s%s E2B_SANDBOX_URL=%s%s/envd E2B_API_KEY=<a hutch key> (docs/E2B.md)\n",
		base, e2b.Prefix, base, e2b.Prefix)
	s.log.Info("hutch serving", "addr", s.addr.String(), "version", s.version, "node", p.node, "driver", def.Name(),
		"driver.reason", p.driversWhy, "isolation", caps.Isolation, "drivers", p.drivers.Names(), "data", s.cfg.DataDir)
	for _, d := range caps.Degraded {
		s.log.Warn("DEGRADED: "+d, "driver", def.Name())
	}
	for name, err := range p.drivers.Missing() {
		s.log.Warn("driver not loaded: its sandboxes are unavailable", "driver", name, "err", err)
	}
}

// Addr is the address the API listens on.
func (s *Server) Addr() net.Addr { return s.addr }

func (s *Server) onClose(name string, fn func(context.Context) error) {
	s.closers = append(s.closers, closer{name, fn})
}

// Shutdown closes every part in reverse order of start, each step logged
// and bounded by the shutdown timeout of its own, so one slow step never
// leaves the next an expired context. The servers opened last, so they
// close first: they stop accepting and drain their requests (serve)
// before anything those requests use closes.
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
