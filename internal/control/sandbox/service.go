// Package sandbox is the sandbox service, the only door to a sandbox: the
// HTTP API, the preview router and the gateway reach sandboxes through its
// methods, never through an agent client or a driver (door.go), so
// activity, quotas and audit live in one place.
//
// It validates requests against the server's limits and the capabilities
// of the sandbox's driver, keeps each sandbox's state in the store and
// drives the state machine (state.go): creating, starting, stopping and
// destroying are the transitional states, each change names the state it
// expects in the store update itself, and one lock per sandbox serialises
// the lifecycle calls. Each sandbox goes to the driver recorded with it; a
// sandbox of a driver this server has not loaded is shown as unavailable
// and left alone. The service also owns the lifecycle loops: recovery
// after a restart, expiry, and the sweep of orphans. Every change of a
// sandbox's state is appended to its tenant's event log (events.go).
//
// Lifecycle: New (no side effects), Recover once before serving, Run for
// the loops, Close at shutdown (sandboxes go on running).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/keylock"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/store"
)

// DefaultMaxCalls bounds the calls in flight to one sandbox (streams
// included) when Config.MaxCallsPerSandbox is zero.
const DefaultMaxCalls = 1024

// Config holds what the service needs: its parts and the defaults and
// ceilings it applies.
type Config struct {
	Store   store.Store
	Drivers *driver.Set
	// Events is the event log the service appends to.
	Events *events.Log
	// Gateway is the provider gateway; nil gives sandboxes none.
	Gateway Gateway
	// Templates resolves a tenant's image templates; nil offers only the
	// drivers' own (host).
	Templates Templates
	// Volumes resolves a tenant's volumes; nil offers none.
	Volumes Volumes
	// SnapshotDir holds snapshots' files, one directory each, made and
	// removed by the driver that took them; "" offers no snapshots.
	SnapshotDir string
	Log         *slog.Logger
	// Node names this control plane in the sandboxes it owns.
	Node string

	DefaultTemplate string
	DefaultLimits   api.Limits
	MaxLimits       api.Limits
	// Settings are the lifecycle settings at start (settings.go); they
	// must pass CheckSettings.
	Settings     api.Settings
	MaxFileBytes int64
	// MaxTarBytes bounds what one tar upload unpacks in a sandbox; zero
	// leaves the agent's default.
	MaxTarBytes    int64
	MaxOutputBytes int // per stream, for run-to-completion exec
	// MaxCallsPerSandbox bounds the calls in flight to one sandbox;
	// zero means DefaultMaxCalls.
	MaxCallsPerSandbox int
	// Egress serves the egress proxy of each running sandbox whose driver
	// gives it a channel out (internal/edge/egress); required when a
	// loaded driver does.
	Egress netpolicy.Proxies
	// Sealer seals what the store keeps of a sandbox that is its tenant's
	// secret (env values, the agent's token); nil keeps them in clear
	// (tests).
	Sealer Sealer
	// Observer is told how creates, commands and calls through the door
	// went (observe.go); nil observes nothing.
	Observer Observer
	// Disk refuses calls that grow sandbox data while the data
	// directory's filesystem is below its reserve; nil checks nothing.
	Disk DiskGuard
	// TeardownTimeout bounds a destroy or a rollback, which run on a
	// context that outlives the request.
	TeardownTimeout time.Duration
	// AgentHungAfter is how long an agent whose process lives may go
	// without answering before its sandbox is failed (agentcheck.go);
	// zero means DefaultAgentHungAfter.
	AgentHungAfter time.Duration
	// EgressEventWindow is how long a sandbox's egress decisions about
	// one destination are counted into one event (egress_events.go);
	// zero means DefaultEgressWindow.
	EgressEventWindow time.Duration
	// Admission (admission.go). Capacity bounds what this node's live
	// sandboxes may be promised together (a zero field: no bound);
	// Quotas are the tenants' quotas, which admit every create and start
	// and every watch and stream; nil: quotas of no default (tests), whose
	// lock still serialises admissions against Capacity.
	Capacity Capacity
	Quotas   *quota.Service
	// HostMemory reads the host's available and total memory in bytes,
	// which a create or start is admitted against below the setting
	// memory_critical_pct; nil reads /proc/meminfo (hostinfo.Memory).
	HostMemory func() (available, total uint64, err error)
}

// Templates is internal/control/templates' Service as the sandbox service sees
// it.
type Templates interface {
	// Resolve returns the layers and defaults of the caller's template.
	Resolve(ctx context.Context, name string) (*driver.Image, error)
}

// Volumes is internal/control/volumes' Service as the sandbox service sees it.
type Volumes interface {
	// Resolve checks the caller's volume mounts and returns them for the
	// driver.
	Resolve(ctx context.Context, mounts []api.VolumeMount) ([]driver.Volume, error)
}

// DiskGuard is internal/runtime/host/diskguard's Guard as the service sees it.
type DiskGuard interface {
	// Check returns a 507 error when the filesystem is too full for what.
	Check(what string) error
}

// Service manages sandboxes.
type Service struct {
	cfg     Config
	store   store.Store
	drivers drivers
	log     *slog.Logger
	events  *events.Log
	gateway Gateway

	settings atomic.Pointer[api.Settings] // in force (settings.go)
	seals    seals                        // what the store keeps sealed (seal.go)
	observe  observer                     // the Observer's reports (observe.go)

	locks     keylock.Map // serialises the lifecycle calls of each sandbox
	admission *admission  // (admission.go)

	// lost receives the sandboxes whose agent a call could not reach
	// (agentcheck.go).
	lostAgents chan string

	mu          sync.Mutex
	lives       map[string]*live // the sandboxes live on this server (live.go)
	sampled     time.Time        // the period the metrics were sampled last (metrics.go)
	sampleEvery time.Duration    // the samples' period, as SampleDue last set it
	// capturing: snapshot id → its files are being made (snapshots.go)
	capturing map[string]bool

	procs procWatch // the exit watchers of background processes

	nodes nodes // where the sandboxes not live here run, for NodeOf (locate.go)

	// draining is set while this node drains: it takes no new sandbox
	// (nodes.go).
	draining atomic.Bool
}

// New returns the service. It starts nothing; see Recover and Run.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Drivers == nil || cfg.Events == nil {
		return nil, errors.New("sandbox service: Store, Drivers and Events are required")
	}
	if cfg.MaxFileBytes <= 0 || cfg.MaxOutputBytes <= 0 || cfg.TeardownTimeout <= 0 {
		return nil, errors.New("sandbox service: MaxFileBytes, MaxOutputBytes and TeardownTimeout must be positive")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.AgentHungAfter <= 0 {
		cfg.AgentHungAfter = DefaultAgentHungAfter
	}
	if cfg.MaxCallsPerSandbox == 0 {
		cfg.MaxCallsPerSandbox = DefaultMaxCalls
	}
	if cfg.Disk == nil {
		cfg.Disk = noGuard{}
	}
	if cfg.Quotas == nil {
		cfg.Quotas = quota.New(quota.Config{Store: cfg.Store, Log: cfg.Log})
	}
	if cfg.Egress == nil {
		for _, d := range cfg.Drivers.Loaded() {
			if _, ok := d.(driver.Egresser); ok {
				return nil, fmt.Errorf("sandbox service: the %s driver gives sandboxes a channel out, and no egress proxy serves it (Config.Egress)", d.Name())
			}
		}
	}
	if err := CheckSettings(cfg.Settings); err != nil {
		return nil, fmt.Errorf("sandbox service: %w", err)
	}
	s := &Service{
		cfg:        cfg,
		store:      cfg.Store,
		drivers:    drivers{Set: cfg.Drivers, snapshotDir: cfg.SnapshotDir},
		log:        cfg.Log,
		events:     cfg.Events,
		gateway:    cfg.Gateway,
		seals:      seals{sealer: cfg.Sealer},
		observe:    observer{o: cfg.Observer},
		lostAgents: make(chan string, lostQueue),
		lives:      map[string]*live{},
		capturing:  map[string]bool{},
	}
	memory := cfg.HostMemory
	if memory == nil {
		memory = hostinfo.Memory
	}
	s.admission = &admission{store: cfg.Store, quotas: cfg.Quotas, node: cfg.Node, capacity: cfg.Capacity,
		memory: memory, settings: s.Settings, log: cfg.Log}
	s.settings.Store(&cfg.Settings)
	return s, nil
}

// Config returns the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// noGuard checks nothing.
type noGuard struct{}

func (noGuard) Check(string) error { return nil }
