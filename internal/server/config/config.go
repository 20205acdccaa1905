// Package config is hutch serve's configuration: one struct with defaults,
// environment overrides (HUTCH_*), flags over both, and Validate.
package config

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/edge/router/previewhost"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Config is everything hutch serve reads at start.
type Config struct {
	Listen  string // address of the API
	DataDir string // store, keys, sandboxes
	Store   string // a registered store: where the state is kept
	// StoreURL names the database of a store that runs as a server of
	// its own (postgres): a postgres:// URL or libpq's key=value string.
	// It may hold a password: log or show only StoreURLRedacted.
	StoreURL string
	Driver   string // auto, or a registered driver: the default for new sandboxes
	// AdminKey, from $HUTCH_ADMIN_KEY only, is the admin key a first
	// start makes (auth.BootstrapKey) instead of one in <data>/admin.key.
	AdminKey string
	// Drivers are the only drivers opened; none means every registered
	// one that can run here. A control plane in a Pod names only
	// kubernetes, so that no sandbox runs inside its own Pod.
	Drivers []string
	// MetricsListen is an address of its own where GET /metrics is served
	// without a key, for a scraper on a private network; "" serves them
	// only on the API, to admin keys.
	MetricsListen string
	// Node names this control plane in the sandboxes it owns; "" means
	// the name kept in <data>/node, made on first start.
	Node string
	// Advertise is the base URL other nodes reach this node's API at
	// (http://host:port); "" means the listen address as a URL
	// (AdvertiseURL).
	Advertise string
	// NodeLabels are this node's labels in the fleet's registry, for
	// placement to match.
	NodeLabels map[string]string
	AgentPath  string // hutch-agent; "" finds it beside the hutch binary, then on PATH
	WarmPool   int    // sandboxes the driver starts ahead of need
	// EgressAllowPrivate are private ranges sandboxes may reach through
	// the egress proxy, when their allowlist names the destination too.
	EgressAllowPrivate []netip.Prefix
	// CgroupParent names the cgroup under which the namespace driver
	// makes one per sandbox (at the root of each hierarchy).
	CgroupParent string
	// Kubernetes is where the kubernetes driver runs sandboxes: a
	// kubeconfig (or in-cluster credentials), its namespace and the
	// registry the cluster pulls from.
	Kubernetes driver.KubernetesOptions
	LogLevel   string // debug, info, warn, error
	// LogFormat is "json", "text" or "auto" (text on a terminal, JSON
	// otherwise).
	LogFormat string
	// PreviewDomain is where previews are served, on the API's listener:
	// <port>-<sandbox id>.<domain>.
	PreviewDomain string
	// PreviewURL is how clients reach previews when a proxy fronts hutch
	// (router.Config.PublicURL); "" means as each request came.
	PreviewURL string
	// AppsDomain is where apps are served, <name>.<domain> on the API's
	// listener; empty means PreviewDomain.
	AppsDomain string
	// Providers is the provider gateway's file (internal/edge/gateway); ""
	// configures none.
	Providers string
	// DefaultTemplate is the template of a sandbox whose create names
	// none: "host", or the name of an image template (each tenant's own of
	// that name).
	DefaultTemplate string
	// RegistryInsecure are registries ("host:port") on the operator's own
	// network: pulls reach them at private addresses and over plain HTTP.
	// Any other registry must be at a public address, over TLS.
	RegistryInsecure []string
	// MaxImageBytes bounds an uploaded image archive and each layer of an
	// image, compressed and unpacked.
	MaxImageBytes int64
	// TemplateFetchTimeout bounds fetching a template's layers from
	// another node of a fleet; TemplateCollectEvery is how often a node of
	// a fleet collects the layers of templates deleted through another.
	TemplateFetchTimeout time.Duration
	TemplateCollectEvery time.Duration

	DefaultLimits  api.Limits
	MaxLimits      api.Limits
	DefaultTimeout time.Duration // sandbox lifetime when a create names none
	MaxTimeout     time.Duration
	// OnExpiry is what a sandbox's timeout does when its create names
	// nothing: api.OnExpiryDestroy or api.OnExpiryStop.
	OnExpiry string
	// ExpiryWarning is how long before a running sandbox's expiry its
	// sandbox.expiring event comes; 0: none.
	ExpiryWarning time.Duration
	// SandboxIdle, OnIdle, PausedStopAfter, MemoryLowPct,
	// MemoryCriticalPct and MinIdle are the idle and memory-pressure
	// policy (api.Settings); a PATCH /v1/settings kept in the store wins
	// over them.
	SandboxIdle       time.Duration
	OnIdle            string
	PausedStopAfter   time.Duration
	MemoryLowPct      int
	MemoryCriticalPct int
	MinIdle           time.Duration
	MaxFileBytes      int64 // one file through the file API
	MaxTarBytes       int64 // one tar upload
	MaxOutputBytes    int   // per stream of a run-to-completion exec
	MaxBodyBytes      int64 // one JSON request body
	MaxSecretBytes    int64 // one secret's value
	// MaxCallsPerSandbox bounds the calls in flight to one sandbox
	// (streams, terminals and watches included).
	MaxCallsPerSandbox int
	// MaxConnsPerClient bounds the connections one client address may
	// hold open on the API's listener (and the metrics'); at it, a new
	// connection closes the client's oldest idle one.
	MaxConnsPerClient int
	// RequestTimeout bounds reading and answering an ordinary request;
	// streams, transfers and commands are exempt. IdleTimeout closes a
	// kept-alive connection that carries no request; AnonymousIdleTimeout
	// one on which no request showed a valid key (internal/base/connlimit).
	RequestTimeout       time.Duration
	IdleTimeout          time.Duration
	AnonymousIdleTimeout time.Duration
	// DiskReserve is the room kept on the data directory's filesystem for
	// hutch's own state: a reserve file the store may spend, and the free
	// space (and DiskReserveInodes inodes) below which calls that grow
	// sandbox data are refused with 507.
	DiskReserve       int64
	DiskReserveInodes int
	// ShutdownTimeout bounds each step of shutdown.
	ShutdownTimeout time.Duration
	TeardownTimeout time.Duration
	// FreezeTimeout bounds how long a pause or a snapshot waits for a
	// sandbox's processes to stop under the cgroup freezer: a process
	// stops only once it is scheduled, which a busy host delays.
	FreezeTimeout time.Duration
	// AgentHungAfter is how long a sandbox's agent whose process lives
	// may go without answering before the sandbox is failed.
	AgentHungAfter time.Duration
	// EventRetention is how long events are kept, and EventMaxPerTenant
	// how many of each tenant's (the newest); the server trims the rest.
	// Zero keeps them.
	EventRetention    time.Duration
	EventMaxPerTenant int

	// TenantQuotas are the quotas of every tenant that has not set its
	// own (PUT /v1/tenants/{id}/quotas); 0 is no limit.
	TenantQuotas api.QuotaLimits
	// ReserveMemoryMB and ReservePids are kept from sandboxes for the
	// control plane and the host: the namespace driver caps its parent
	// cgroup at the host's memory and tasks (the smaller of pid_max and
	// threads-max) less them, never below half (hostinfo.Budget).
	ReserveMemoryMB int
	ReservePids     int
	// The host's overcommit: the limits of this node's live sandboxes may
	// total MaxMemoryOvercommit × the memory budget, MaxPidsOvercommit ×
	// the tasks budget and (those not paused) MaxCPUOvercommit × the
	// host's CPUs; past them a create, start or resume is 503
	// insufficient_capacity. 0 sets no bound.
	MaxMemoryOvercommit float64
	MaxPidsOvercommit   float64
	MaxCPUOvercommit    float64
}

// Default returns the embedded defaults: `hutch serve` with no flags.
func Default() Config {
	return Config{
		Listen:               "127.0.0.1:7070",
		DataDir:              "./hutch-data",
		Store:                "sqlite",
		Driver:               "auto",
		Kubernetes:           driver.KubernetesOptions{Namespace: "hutch"},
		CgroupParent:         "hutch",
		WarmPool:             2,
		LogLevel:             "info",
		LogFormat:            "auto",
		PreviewDomain:        "localhost",
		DefaultLimits:        api.Limits{MemoryMB: 512, CPU: 1, Pids: 256},
		MaxLimits:            api.Limits{MemoryMB: 16384, CPU: 16, Pids: 16384},
		DefaultTimeout:       time.Hour,
		MaxTimeout:           24 * time.Hour,
		MaxFileBytes:         100 << 20,
		MaxTarBytes:          1 << 30,
		MaxOutputBytes:       1 << 20,
		MaxBodyBytes:         1 << 20,
		MaxSecretBytes:       64 << 10,
		MaxImageBytes:        8 << 30,
		TemplateFetchTimeout: 10 * time.Minute,
		TemplateCollectEvery: time.Minute,
		DefaultTemplate:      api.HostTemplate,
		OnExpiry:             api.OnExpiryDestroy,
		ExpiryWarning:        5 * time.Minute,
		OnIdle:               api.OnExpiryPause,
		MemoryLowPct:         20,
		MemoryCriticalPct:    10,
		MinIdle:              time.Minute,
		MaxCallsPerSandbox:   1024,
		MaxConnsPerClient:    256,
		DiskReserve:          64 << 20,
		DiskReserveInodes:    1024,
		RequestTimeout:       time.Minute,
		IdleTimeout:          2 * time.Minute,
		AnonymousIdleTimeout: 5 * time.Second,
		ShutdownTimeout:      10 * time.Second,
		TeardownTimeout:      30 * time.Second,
		FreezeTimeout:        10 * time.Second,
		AgentHungAfter:       time.Minute,
		EventRetention:       30 * 24 * time.Hour,
		EventMaxPerTenant:    100000,
		// Host bounds keep a tenant from promising more than the host
		// has; one count per tenant keeps any one from taking every uid
		// range and row, the disk and the rest keep one from filling a
		// 2-core, 24 GiB box's disk, store and memory (a watch holds
		// inotify watches, a stream a goroutine and buffers). Operators
		// hosting tenants that must not crowd each other set memory, CPU
		// and pids too.
		TenantQuotas: api.QuotaLimits{Sandboxes: 100, DiskMB: 50 << 10,
			Snapshots: 200, SnapshotsMB: 20 << 10, Volumes: 50, VolumesMB: 20 << 10, Templates: 50, TemplatesMB: 20 << 10,
			Apps: 20, Keys: 100, Secrets: 1000, Watches: 64, Streams: 256},
		ReserveMemoryMB: 1024,
		ReservePids:     4096,
		// Limits are ceilings, not use: memory and pids are overcommitted
		// within a parent cgroup capped at the budget, the memory policy
		// the valve; CPU, compressible, is not admitted against the host
		// (sandbox.Capacity says why).
		MaxMemoryOvercommit: 128,
		MaxPidsOvercommit:   8,
		MaxCPUOvercommit:    0,
	}
}

// Load returns the defaults overridden by the environment and then by
// args.
func Load(args []string, getenv func(string) string) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet("hutch serve", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() { usage(fs) }
	var envErr error
	str := func(p *string, name, env, usage string) {
		if v := getenv(env); v != "" {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" ($"+env+")")
	}
	str(&c.Listen, "listen", "HUTCH_LISTEN", "address to serve the API on")
	str(&c.MetricsListen, "metrics-listen", "HUTCH_METRICS_LISTEN", "host:port to serve Prometheus metrics on at /metrics with no key, for a scraper on a private network: never a public address (default: only on the API, to admin keys)")
	str(&c.DataDir, "data", "HUTCH_DATA", "data directory")
	str(&c.Store, "store", "HUTCH_STORE", storeUsage())
	// Not str: a default taken from the environment would print its
	// password in the flag help.
	fs.StringVar(&c.StoreURL, "store-url", "", "database of --store postgres: postgres://user:password@host:port/database, or libpq's key=value string ($HUTCH_STORE_URL)")
	str(&c.Driver, "driver", "HUTCH_DRIVER", driverUsage())
	c.AdminKey = getenv("HUTCH_ADMIN_KEY")
	if v := getenv("HUTCH_DRIVERS"); v != "" {
		c.Drivers = splitList(v)
	}
	fs.Func("drivers", "comma-separated drivers to open, the only ones sandboxes may run on (default: every one that can run here) ($HUTCH_DRIVERS)", func(v string) error {
		c.Drivers = splitList(v)
		return nil
	})
	str(&c.CgroupParent, "cgroup-parent", "HUTCH_CGROUP_PARENT", "cgroup under which the namespace driver makes one per sandbox")
	str(&c.Kubernetes.Kubeconfig, "kubeconfig", "HUTCH_KUBECONFIG", "kubeconfig of the cluster the kubernetes driver runs sandboxes on (default: in-cluster credentials, when hutch runs in a Pod)")
	str(&c.Kubernetes.Namespace, "kubernetes-namespace", "HUTCH_KUBERNETES_NAMESPACE", "namespace the kubernetes driver owns: it makes every sandbox's Pod, Secret and NetworkPolicy there")
	str(&c.Kubernetes.Registry, "kubernetes-registry", "HUTCH_KUBERNETES_REGISTRY", "host:port of the registry the cluster pulls from; hutch pushes its agent's image, its base image and its templates there")
	str(&c.Kubernetes.RuntimeClass, "kubernetes-runtime-class", "HUTCH_KUBERNETES_RUNTIME_CLASS", "runtimeClassName of every sandbox's Pod, for gVisor or Kata (default: the cluster's)")
	fs.BoolVar(&c.Kubernetes.UserNamespaces, "kubernetes-user-namespaces", getenv("HUTCH_KUBERNETES_USER_NAMESPACES") == "true", "run every sandbox's Pod in a user namespace of its own (hostUsers: false); the nodes' runtime must support it ($HUTCH_KUBERNETES_USER_NAMESPACES=true)")
	str(&c.Node, "node", "HUTCH_NODE", "name of this control plane in the sandboxes it owns (default: kept in <data>/node)")
	str(&c.Advertise, "advertise", "HUTCH_ADVERTISE", "base URL other nodes reach this node's API at, http://host:port (default: the listen address)")
	if v := getenv("HUTCH_NODE_LABELS"); v != "" {
		labels, err := parseLabels(nil, splitList(v))
		envErr = errors.Join(envErr, err)
		c.NodeLabels = labels
	}
	var flagLabels []string
	fs.Func("node-label", "label of this node, k=v, for placement; repeat for more ($HUTCH_NODE_LABELS=k=v,k2=v2)", func(v string) error {
		flagLabels = append(flagLabels, v)
		return nil
	})
	str(&c.AgentPath, "agent", "HUTCH_AGENT", "path of hutch-agent (default: beside hutch, then $PATH)")
	str(&c.LogLevel, "log-level", "HUTCH_LOG_LEVEL", "debug, info, warn or error")
	str(&c.LogFormat, "log-format", "HUTCH_LOG_FORMAT", "json, text, or auto: text on a terminal, JSON otherwise")
	str(&c.Providers, "providers", "HUTCH_PROVIDERS", "YAML file of the providers the gateway serves at /provider/v1 (none when unset)")
	str(&c.OnExpiry, "on-expiry", "HUTCH_ON_EXPIRY", "what a sandbox's timeout does when its create names nothing: destroy, stop (its files kept) or pause (its memory kept too)")
	str(&c.OnIdle, "on-idle", "HUTCH_ON_IDLE", "what --sandbox-idle does to an idle sandbox: pause, stop or destroy")
	str(&c.DefaultTemplate, "default-template", "HUTCH_DEFAULT_TEMPLATE", "template of a sandbox whose create names none: host, or an image template's name (each tenant's own)")
	if v := getenv("HUTCH_REGISTRY_INSECURE"); v != "" {
		c.RegistryInsecure = splitList(v)
	}
	fs.Func("registry-insecure", "comma-separated registries (host:port) on your own network that pulls may reach at private addresses and over plain HTTP ($HUTCH_REGISTRY_INSECURE)", func(v string) error {
		c.RegistryInsecure = splitList(v)
		return nil
	})
	str(&c.PreviewURL, "preview-url", "HUTCH_PREVIEW_URL", "scheme and port clients reach previews at behind a proxy, e.g. https://<preview domain> (default: as each request came)")
	str(&c.AppsDomain, "apps-domain", "HUTCH_APPS_DOMAIN", "domain of apps, <app>.<domain> (default: the preview domain)")
	str(&c.PreviewDomain, "preview-domain", "HUTCH_PREVIEW_DOMAIN", "domain of previews, <port>-<sandbox id>.<domain> (localhost needs no DNS)")
	num := func(p *int, name, env, usage string) {
		if v := getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("$%s: %q is not a number", env, v))
			}
			*p = n
		}
		fs.IntVar(p, name, *p, usage+" ($"+env+")")
	}
	num(&c.DefaultLimits.MemoryMB, "default-memory-mb", "HUTCH_DEFAULT_MEMORY_MB", "memory limit of a sandbox that names none")
	num(&c.DefaultLimits.Pids, "default-pids", "HUTCH_DEFAULT_PIDS", "pids limit of a sandbox that names none")
	num(&c.WarmPool, "warm-pool", "HUTCH_WARM_POOL", "sandboxes to keep started ahead of need (0: off)")
	num(&c.MaxCallsPerSandbox, "max-calls-per-sandbox", "HUTCH_MAX_CALLS_PER_SANDBOX", "calls in flight to one sandbox (streams, terminals, watches included); one more is 429 too_many_calls")
	num(&c.MaxConnsPerClient, "max-conns-per-client", "HUTCH_MAX_CONNS_PER_CLIENT", "connections one client address may hold open on the API's listener; a new one closes the oldest idle one, or is closed at once when all carry a request")
	num(&c.EventMaxPerTenant, "event-max-per-tenant", "HUTCH_EVENT_MAX_PER_TENANT", "events kept per tenant, the newest; older ones are trimmed (0: no limit)")
	num(&c.MaxOutputBytes, "max-output-bytes", "HUTCH_MAX_OUTPUT_BYTES", "bytes kept per stream of a run-to-completion exec")
	num(&c.TenantQuotas.Sandboxes, "tenant-max-sandboxes", "HUTCH_TENANT_MAX_SANDBOXES", "default quota: sandboxes a tenant may have that are neither destroyed nor failed, stopped ones included (0: no limit)")
	num(&c.TenantQuotas.MemoryMB, "tenant-memory-mb", "HUTCH_TENANT_MEMORY_MB", "default quota: MiB of memory limits of a tenant's sandboxes that are not stopped (0: no limit)")
	num(&c.TenantQuotas.Pids, "tenant-pids", "HUTCH_TENANT_PIDS", "default quota: pids limits of a tenant's sandboxes that are not stopped (0: no limit)")
	num(&c.TenantQuotas.DiskMB, "tenant-disk-mb", "HUTCH_TENANT_DISK_MB", "default quota: MiB of disk of a tenant: its sandboxes' files, snapshots, volumes and templates (0: no limit)")
	num(&c.TenantQuotas.Snapshots, "tenant-max-snapshots", "HUTCH_TENANT_MAX_SNAPSHOTS", "default quota: snapshots a tenant may keep (0: no limit)")
	num(&c.TenantQuotas.SnapshotsMB, "tenant-snapshots-mb", "HUTCH_TENANT_SNAPSHOTS_MB", "default quota: MiB a tenant's snapshots may take (0: no limit)")
	num(&c.TenantQuotas.Volumes, "tenant-max-volumes", "HUTCH_TENANT_MAX_VOLUMES", "default quota: volumes a tenant may have (0: no limit)")
	num(&c.TenantQuotas.VolumesMB, "tenant-volumes-mb", "HUTCH_TENANT_VOLUMES_MB", "default quota: MiB of a tenant's volumes' sizes together (0: no limit)")
	num(&c.TenantQuotas.Templates, "tenant-max-templates", "HUTCH_TENANT_MAX_TEMPLATES", "default quota: templates a tenant may have (0: no limit)")
	num(&c.TenantQuotas.TemplatesMB, "tenant-templates-mb", "HUTCH_TENANT_TEMPLATES_MB", "default quota: MiB a tenant's templates' unpacked layers may take (0: no limit)")
	num(&c.TenantQuotas.Apps, "tenant-max-apps", "HUTCH_TENANT_MAX_APPS", "default quota: apps a tenant may have (0: no limit)")
	num(&c.TenantQuotas.Keys, "tenant-max-keys", "HUTCH_TENANT_MAX_KEYS", "default quota: API keys a tenant may have (0: no limit)")
	num(&c.TenantQuotas.Secrets, "tenant-max-secrets", "HUTCH_TENANT_MAX_SECRETS", "default quota: secrets a tenant may have (0: no limit)")
	num(&c.TenantQuotas.Watches, "tenant-max-watches", "HUTCH_TENANT_MAX_WATCHES", "default quota: file watches a tenant's keys may hold open on this server (0: no limit)")
	num(&c.TenantQuotas.Streams, "tenant-max-streams", "HUTCH_TENANT_MAX_STREAMS", "default quota: streams (events, output, logs, terminal input) a tenant's keys may hold open on this server (0: no limit)")
	num(&c.ReserveMemoryMB, "reserve-memory-mb", "HUTCH_RESERVE_MEMORY_MB", "MiB of the host's memory kept from sandboxes for the control plane and the host (caps the cgroup parent; never more than half)")
	num(&c.MemoryLowPct, "memory-low-pct", "HUTCH_MEMORY_LOW_PCT", "below this % of the host's memory available, the idle window shrinks and idle sandboxes are paused (0: off)")
	num(&c.MemoryCriticalPct, "memory-critical-pct", "HUTCH_MEMORY_CRITICAL_PCT", "below this % of the host's memory available, paused sandboxes are stopped, the longest paused first (0: off)")
	num(&c.ReservePids, "reserve-pids", "HUTCH_RESERVE_PIDS", "tasks of the host's pid_max and threads-max kept from sandboxes for the control plane and the host (never more than half)")
	if v := getenv("HUTCH_EGRESS_ALLOW_PRIVATE"); v != "" {
		ps, err := parsePrefixes(v)
		envErr = errors.Join(envErr, err)
		c.EgressAllowPrivate = ps
	}
	fs.Func("egress-allow-private", "comma-separated CIDRs of private ranges sandboxes may reach when their allowlist names them ($HUTCH_EGRESS_ALLOW_PRIVATE)", func(v string) error {
		ps, err := parsePrefixes(v)
		c.EgressAllowPrivate = ps
		return err
	})
	flt := func(p *float64, name, env, usage string) {
		if v := getenv(env); v != "" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("$%s: %q is not a number", env, v))
			}
			*p = n
		}
		fs.Float64Var(p, name, *p, usage+" ($"+env+")")
	}
	flt(&c.TenantQuotas.CPU, "tenant-cpu", "HUTCH_TENANT_CPU", "default quota: cores of CPU limits of a tenant's sandboxes that are not stopped (0: no limit)")
	flt(&c.MaxMemoryOvercommit, "max-memory-overcommit", "HUTCH_MAX_MEMORY_OVERCOMMIT", "sandboxes' memory limits may total this times the host's memory less --reserve-memory-mb; past it a create is 503 insufficient_capacity (0: no bound; 1: never promise more than the host has, where the default lets the cgroup parent's cap and the memory policy hold real use)")
	flt(&c.MaxPidsOvercommit, "max-pids-overcommit", "HUTCH_MAX_PIDS_OVERCOMMIT", "sandboxes' pids limits may total this times the smaller of pid_max and threads-max less --reserve-pids (0: no bound)")
	flt(&c.MaxCPUOvercommit, "max-cpu-overcommit", "HUTCH_MAX_CPU_OVERCOMMIT", "CPU limits of the sandboxes not paused may total this times the host's CPUs (0, the default: no bound; CPU is shared, not exhausted)")
	dur := func(p *time.Duration, name, env, usage string) {
		if v := getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("$%s: %q is not a duration", env, v))
			}
			*p = d
		}
		fs.DurationVar(p, name, *p, usage+" ($"+env+")")
	}
	dur(&c.DefaultTimeout, "default-timeout", "HUTCH_DEFAULT_TIMEOUT", "lifetime of a sandbox that names none")
	dur(&c.MaxTimeout, "max-timeout", "HUTCH_MAX_TIMEOUT", "longest lifetime a sandbox may ask for")
	dur(&c.SandboxIdle, "sandbox-idle", "HUTCH_SANDBOX_IDLE", "how long a sandbox may go without a call or process output before --on-idle is done to it (0: never)")
	dur(&c.PausedStopAfter, "paused-stop-after", "HUTCH_PAUSED_STOP_AFTER", "stop a sandbox paused this long, freeing its memory (0: never)")
	dur(&c.MinIdle, "min-idle", "HUTCH_MIN_IDLE", "shortest idle window low memory shrinks --sandbox-idle to")
	dur(&c.ExpiryWarning, "expiry-warning", "HUTCH_EXPIRY_WARNING", "how long before a running sandbox's expiry a sandbox.expiring event comes (0: none)")
	dur(&c.RequestTimeout, "request-timeout", "HUTCH_REQUEST_TIMEOUT", "time to read and answer an ordinary API request (streams, transfers and commands are exempt)")
	dur(&c.EventRetention, "event-retention", "HUTCH_EVENT_RETENTION", "how long events are kept before they are trimmed (0: for ever)")
	dur(&c.IdleTimeout, "idle-timeout", "HUTCH_IDLE_TIMEOUT", "time a kept-alive connection may sit idle between requests")
	dur(&c.AnonymousIdleTimeout, "anonymous-idle-timeout", "HUTCH_ANONYMOUS_IDLE_TIMEOUT", "time a connection on which no request showed a valid key may sit idle (before its first request too)")
	dur(&c.AgentHungAfter, "agent-hung-after", "HUTCH_AGENT_HUNG_AFTER", "how long a sandbox's agent may go without answering, its process alive, before the sandbox is failed (a busy host delays answers; a dead agent fails it at once)")
	dur(&c.TemplateFetchTimeout, "template-fetch-timeout", "HUTCH_TEMPLATE_FETCH_TIMEOUT", "how long a node of a fleet waits for a template's layers from the node that holds them before the create is refused (503 template_fetch_timeout)")
	dur(&c.TemplateCollectEvery, "template-collect-every", "HUTCH_TEMPLATE_COLLECT_EVERY", "how often a node of a fleet removes the layers of templates deleted through other nodes")
	dur(&c.FreezeTimeout, "freeze-timeout", "HUTCH_FREEZE_TIMEOUT", "how long a pause or a snapshot waits for a sandbox's processes to stop (a busy host slows them); a pause not done by then fails, and the sandbox runs on")
	bytes := func(p *int64, name, env, usage string) {
		if v := getenv(env); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("$%s: %q is not a number", env, v))
			}
			*p = n
		}
		fs.Int64Var(p, name, *p, usage+" ($"+env+")")
	}
	bytes(&c.DiskReserve, "disk-reserve", "HUTCH_DISK_RESERVE", "bytes kept on the data directory's filesystem for hutch's own state; below it, sandbox growth through the API is refused (507)")
	num(&c.DiskReserveInodes, "disk-reserve-inodes", "HUTCH_DISK_RESERVE_INODES", "free inodes below which sandbox growth through the API is refused (507)")
	bytes(&c.MaxFileBytes, "max-file-bytes", "HUTCH_MAX_FILE_BYTES", "largest file the file API reads or writes")
	bytes(&c.MaxTarBytes, "max-tar-bytes", "HUTCH_MAX_TAR_BYTES", "largest tar upload")
	bytes(&c.MaxImageBytes, "max-image-bytes", "HUTCH_MAX_IMAGE_BYTES", "largest uploaded image archive, and largest layer of an image, compressed or unpacked")
	bytes(&c.MaxSecretBytes, "max-secret-bytes", "HUTCH_MAX_SECRET_BYTES", "largest secret value (the master key is $HUTCH_SECRETS_KEY or <data>/secrets.key)")
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.StoreURL == "" {
		c.StoreURL = getenv("HUTCH_STORE_URL")
	}
	if len(flagLabels) > 0 {
		labels, err := parseLabels(nil, flagLabels)
		if err != nil {
			return c, err
		}
		c.NodeLabels = labels
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if len(c.Drivers) == 1 && c.Driver == "auto" {
		// One driver opened is the default: auto chooses among several.
		c.Driver = c.Drivers[0]
	}
	c.Kubernetes.Required = c.Driver == "kubernetes"
	return c, c.Validate()
}

// Validate reports every problem in c at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	if _, _, err := net.SplitHostPort(c.MetricsListen); c.MetricsListen != "" && err != nil {
		errs = append(errs, fmt.Errorf("metrics listen %q: %w", c.MetricsListen, err))
	}
	if strings.ContainsAny(c.Node, "/\x00") || len(c.Node) > 128 {
		errs = append(errs, fmt.Errorf("node %q must be at most 128 bytes without '/' or NUL", c.Node))
	}
	if c.Advertise != "" {
		if err := checkAdvertise(c.Advertise); err != nil {
			errs = append(errs, err)
		}
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data directory must be set"))
	}
	switch reg, ok := store.Lookup(c.Store); {
	case !ok:
		errs = append(errs, fmt.Errorf("store %q: this build has %s", c.Store, strings.Join(store.Names(), ", ")))
	case reg.NeedsDSN && c.StoreURL == "":
		errs = append(errs, fmt.Errorf("store %s needs its database's URL: --store-url or $HUTCH_STORE_URL, such as postgres://user:password@host:5432/hutch", c.Store))
	case !reg.NeedsDSN && c.StoreURL != "":
		errs = append(errs, fmt.Errorf("store %s keeps its state in the data directory and takes no --store-url or $HUTCH_STORE_URL", c.Store))
	}
	if _, ok := driver.Lookup(c.Driver); !ok && c.Driver != "auto" {
		errs = append(errs, fmt.Errorf("driver %q: this build has auto, %s", c.Driver, strings.Join(driver.Names(), ", ")))
	}
	for _, name := range c.Drivers {
		if _, ok := driver.Lookup(name); !ok {
			errs = append(errs, fmt.Errorf("drivers: %q: this build has %s", name, strings.Join(driver.Names(), ", ")))
		}
	}
	if len(c.Drivers) > 0 && c.Driver != "auto" && !slices.Contains(c.Drivers, c.Driver) {
		errs = append(errs, fmt.Errorf("driver %s is not among --drivers %s", c.Driver, strings.Join(c.Drivers, ",")))
	}
	if c.CgroupParent == "" || strings.ContainsAny(c.CgroupParent, "/\x00") || c.CgroupParent[0] == '.' {
		errs = append(errs, fmt.Errorf("cgroup parent %q must be one plain name", c.CgroupParent))
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("log format %q: use json, text or auto", c.LogFormat))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q: use debug, info, warn or error", c.LogLevel))
	}
	if c.AppsDomain != "" {
		if err := previewhost.ValidDomain(c.AppsDomain); err != nil {
			errs = append(errs, fmt.Errorf("apps domain: %w", err))
		}
	}
	if err := previewhost.ValidDomain(c.PreviewDomain); err != nil {
		errs = append(errs, err)
	} else if c.PreviewURL != "" {
		if _, err := previewhost.ParsePublicURL(c.PreviewURL, c.PreviewDomain); err != nil {
			errs = append(errs, err)
		}
	}
	if c.DefaultTemplate != api.HostTemplate {
		if err := store.CheckTemplateName(c.DefaultTemplate); err != nil {
			errs = append(errs, fmt.Errorf("default template: %w", err))
		}
	}
	for _, r := range c.RegistryInsecure {
		if _, _, err := net.SplitHostPort(r); err != nil {
			errs = append(errs, fmt.Errorf("insecure registry %q must be host:port", r))
		}
	}
	if c.WarmPool < 0 || c.WarmPool > 256 {
		errs = append(errs, fmt.Errorf("warm pool %d must be from 0 to 256", c.WarmPool))
	}
	d, m := c.DefaultLimits, c.MaxLimits
	if d.MemoryMB <= 0 || d.Pids <= 0 || d.CPU <= 0 || d.MemoryMB > m.MemoryMB || d.Pids > m.Pids || d.CPU > m.CPU {
		errs = append(errs, fmt.Errorf("default limits %+v must be positive and within the maximum %+v", d, m))
	}
	if c.EventRetention != 0 && c.EventRetention < time.Hour {
		errs = append(errs, fmt.Errorf("event retention %s must be 0 (for ever) or at least 1h", c.EventRetention))
	}
	if c.EventMaxPerTenant < 0 {
		errs = append(errs, fmt.Errorf("event max per tenant %d must be 0 (no limit) or positive", c.EventMaxPerTenant))
	}
	q := c.TenantQuotas
	if q.Sandboxes < 0 || q.MemoryMB < 0 || q.Pids < 0 || q.DiskMB < 0 || q.Snapshots < 0 || q.SnapshotsMB < 0 ||
		q.Volumes < 0 || q.VolumesMB < 0 || q.Templates < 0 || q.TemplatesMB < 0 || q.Apps < 0 || q.Keys < 0 ||
		q.Secrets < 0 || q.Watches < 0 || q.Streams < 0 || !(q.CPU >= 0) || math.IsInf(q.CPU, 0) {
		errs = append(errs, fmt.Errorf("tenant quotas %+v must be 0 (no limit) or positive", q))
	}
	if c.ReserveMemoryMB < 0 || c.ReservePids < 0 {
		errs = append(errs, fmt.Errorf("reserves (memory %d MiB, pids %d) must not be negative", c.ReserveMemoryMB, c.ReservePids))
	}
	for name, v := range map[string]float64{"max memory overcommit": c.MaxMemoryOvercommit,
		"max pids overcommit": c.MaxPidsOvercommit, "max cpu overcommit": c.MaxCPUOvercommit} {
		if !(v >= 0 && v <= 1000) {
			errs = append(errs, fmt.Errorf("%s %g must be 0 (no bound) or a positive factor up to 1000", name, v))
		}
	}
	if c.TemplateFetchTimeout <= 0 || c.TemplateCollectEvery <= 0 {
		errs = append(errs, fmt.Errorf("the template fetch timeout %s and collection period %s must be positive", c.TemplateFetchTimeout, c.TemplateCollectEvery))
	}
	if c.FreezeTimeout <= 0 || c.FreezeTimeout >= c.TeardownTimeout {
		// A pause that fails still has its sandbox thawed and recorded
		// running within the teardown timeout.
		errs = append(errs, fmt.Errorf("freeze timeout %s must be positive and shorter than the teardown timeout %s", c.FreezeTimeout, c.TeardownTimeout))
	}
	if c.DefaultTimeout <= 0 || c.DefaultTimeout > c.MaxTimeout {
		errs = append(errs, fmt.Errorf("default timeout %s must be positive and at most the maximum %s", c.DefaultTimeout, c.MaxTimeout))
	}
	for name, v := range map[string]int64{
		"max file bytes": c.MaxFileBytes, "max tar bytes": c.MaxTarBytes,
		"max output bytes": int64(c.MaxOutputBytes), "max body bytes": c.MaxBodyBytes,
		"max secret bytes": c.MaxSecretBytes, "max image bytes": c.MaxImageBytes, "max calls per sandbox": int64(c.MaxCallsPerSandbox),
		"disk reserve": c.DiskReserve, "disk reserve inodes": int64(c.DiskReserveInodes),
		"max conns per client": int64(c.MaxConnsPerClient), "request timeout": int64(c.RequestTimeout), "idle timeout": int64(c.IdleTimeout),
		"anonymous idle timeout": int64(c.AnonymousIdleTimeout),
	} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	return errors.Join(errs...)
}

// driverUsage is the --driver flag's help, from the driver registry.
func driverUsage() string {
	var b strings.Builder
	b.WriteString("driver of new sandboxes: auto (the first of these that works here)")
	for _, r := range driver.Registered() {
		fmt.Fprintf(&b, ", %s (%s)", r.Name, r.Summary)
	}
	return b.String()
}

// storeUsage is the --store flag's help, from the store registry.
func storeUsage() string {
	var b strings.Builder
	b.WriteString("where the state is kept:")
	for i, r := range store.Registered() {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s)", r.Name, r.Summary)
	}
	return b.String()
}

// parsePrefixes parses comma-separated CIDRs.
func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("egress allow-private %q: not a CIDR", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Settings are the lifecycle settings the flags give (api.Settings).
func (c Config) Settings() api.Settings {
	s := func(d time.Duration) int { return int(d.Round(time.Second) / time.Second) }
	return api.Settings{
		DefaultTimeoutS:   s(c.DefaultTimeout),
		MaxTimeoutS:       s(c.MaxTimeout),
		OnExpiry:          c.OnExpiry,
		ExpiryWarningS:    s(c.ExpiryWarning),
		IdleTimeoutS:      s(c.SandboxIdle),
		OnIdle:            c.OnIdle,
		PausedStopAfterS:  s(c.PausedStopAfter),
		MemoryLowPct:      c.MemoryLowPct,
		MemoryCriticalPct: c.MemoryCriticalPct,
		MinIdleS:          s(c.MinIdle),
	}
}

// usage prints hutch serve's help as the rest of the CLI's reads: GNU
// flags (one dash works too), each with its type, its environment
// variable and its default.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, "Runs the hutch server: the API, previews, apps and the E2B layer, and the\nsandboxes' drivers. Every flag can also come from the environment variable\nnamed with it; a flag wins over its variable.\n\nUsage:\n  hutch serve [flags]\n\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		typ, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n      %s", f.Name, typ, text)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}
