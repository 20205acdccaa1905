// Package sandbox is the sandbox service: it validates requests against the
// server's limits and the driver's capabilities, keeps each sandbox's state
// in the store, drives the driver through create, stop, start and destroy
// with rollback, and hands callers an authenticated client for the
// sandbox's agent. It also owns the lifecycle loops: recovery after a
// restart, expiry, and the sweep of orphans. Every change of a sandbox's
// state is appended to its tenant's event log (events.go).
package sandbox

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agentclient"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/egress"
	"github.com/hutchdev/hutch/internal/store"
)

// Config holds the defaults and ceilings the service applies.
type Config struct {
	DefaultTemplate string
	DefaultLimits   api.Limits
	MaxLimits       api.Limits
	DefaultTimeout  time.Duration
	MaxTimeout      time.Duration
	MaxFileBytes    int64
	MaxOutputBytes  int // per stream, for run-to-completion exec
	// Egress is the operator's side of every sandbox's egress proxy.
	Egress *egress.Config
	// TeardownTimeout bounds a destroy or a rollback, which run on a
	// context that outlives the request.
	TeardownTimeout time.Duration
}

// Service manages sandboxes.
type Service struct {
	cfg    Config
	store  store.Store
	driver driver.Driver
	caps   driver.Capabilities
	log    *slog.Logger

	mu      sync.Mutex
	agents  map[string]*agentclient.Client // sandbox id → client, for running sandboxes
	ooms    oomCounts                      // sandbox id → OOM kills last seen
	procs   procWatch                      // the exit watchers of background processes
	egress  egressConns                    // the egress proxies of running sandboxes
	gateway Gateway                        // the provider gateway, if set (gateway.go)

	events *Notifier // wakes event streams on every append (events_notify.go)
}

// New returns the service. It starts nothing; see Recover and Run.
func New(cfg Config, st store.Store, drv driver.Driver, log *slog.Logger) *Service {
	return &Service{
		cfg:    cfg,
		store:  st,
		driver: drv,
		caps:   drv.Capabilities(),
		log:    log,
		agents: map[string]*agentclient.Client{},
		ooms:   oomCounts{},
		events: NewNotifier(),
	}
}

// Driver returns the driver the service runs sandboxes on.
func (s *Service) Driver() driver.Driver { return s.driver }

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }
