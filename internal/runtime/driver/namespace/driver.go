// Package namespace is the namespace driver, hutch's default where the
// host allows it: each sandbox is a hutch-agent started as pid 1 of new
// user, mount, pid, net, ipc and uts namespaces, with the sandbox's ids
// mapped to a range of host uids far from root. The agent builds the
// sandbox's root (internal/agent/nsinit): an overlay of the template under a
// per-sandbox upper directory, read-only binds of the host's system
// directories, a fresh /proc, a minimal /dev and a tmpfs /tmp; it pivots
// into it, with only lo for a network. Commands run in a cgroup of their
// own (memory with swap, pids, cpu on cgroup v1 or v2) and a cgroup
// namespace rooted there, as an unprivileged user by default, under
// no_new_privs, a narrowed capability bounding set, Landlock scopes and a
// seccomp filter.
//
// Everything a sandbox has outside the kernel's namespaces carries its id:
// <Dir>/<id>/ (state, envelope, agent log, overlay upper and work
// directories), the cgroups <parent>/<id>/ and its uid range in the
// host-wide registry. Destroy kills the agent, which ends the pid
// namespace and every process in it, empties and removes the cgroups and
// removes the directory; Sweep removes whatever of this that the store
// does not know.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/base/keylock"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
	"github.com/hutchdev/hutch/internal/runtime/host/cgroups"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
)

// Name is the driver's name in configuration and in the API.
const Name = "namespace"

var (
	_ driver.Driver     = (*Driver)(nil)
	_ driver.Sweeper    = (*Driver)(nil)
	_ driver.OOMCounter = (*Driver)(nil)
	_ io.Closer         = (*Driver)(nil)
)

// Host uid ranges: 65,536 ids per sandbox (inside ids 0..65535), from
// 2,200,000,000 up, clear of real accounts and of the process driver's
// range.
const (
	idBase   = 2_200_000_000
	idSize   = 1 << 16
	idRanges = 30_000
)

// Config configures the driver.
type Config struct {
	// Dir holds one directory per sandbox and the templates.
	Dir string
	// AgentPath is the hutch-agent binary.
	AgentPath string
	// WarmPool is how many sandboxes to keep started ahead of need; 0
	// turns the pool off.
	WarmPool int
	// CgroupParent names the cgroup under which every sandbox gets one;
	// "" means "hutch".
	CgroupParent string
	// ReserveMemoryMB and ReservePids are kept from sandboxes for the
	// control plane and the host: Open caps the parent group (one hutch
	// made) at the host's memory and tasks less them (hostinfo.Budget).
	// Zero reserves nothing: the parent is capped at the host's totals.
	ReserveMemoryMB int
	ReservePids     int
	// Storage keeps sandboxes' writable layers and copies them
	// (snapshots); nil probes Dir's filesystem at Open and picks one.
	Storage driver.Storage
	// FreezeTimeout bounds how long a pause or a snapshot waits for the
	// sandbox's processes to stop once the freezer is asked to; 0 means
	// DefaultFreezeTimeout.
	FreezeTimeout time.Duration
	Log           *slog.Logger
}

// DefaultFreezeTimeout is Config.FreezeTimeout's default: runc's bound on
// a freeze. A process stops only once it is scheduled, so on a busy host
// the processes of a sandbox at a small CPU limit take seconds; a process
// in an uninterruptible sleep (a slow disk) may take longer still.
const DefaultFreezeTimeout = 10 * time.Second

// Driver runs sandboxes in namespaces.
type Driver struct {
	cfg        Config
	dir        string
	agentPath  string
	agentInfo  agentproto.Info // what the agent binary speaks
	log        *slog.Logger
	rootless   bool             // hutch is not root: one host uid for every sandbox (ids.go)
	userLimits map[string]int64 // of each sandbox's user namespace (userlimits.go)
	ids        *hostids.Pool    // nil rootless
	reaper     *reaper          // frees ids' ranges; nil rootless
	cg         *cgroups.Manager // nil: no usable cgroups, limits not enforced
	cgErr      error            // why cg is nil
	tmpl       *template
	base       *template // the layer over images (image.go)
	// mapped: as root, the data directory's filesystem can id-map mounts,
	// so sandboxes keep their writable layers with their own ids and get
	// shared image layers (image.go); idmapErr says why not.
	mapped   bool
	idmapErr error
	store    driver.Storage
	probe    confine.Report
	caps     driver.Capabilities
	pool     *warm.Pool[*spawned]
	trash    *launch.Trash
	starts   keylock.Map // serialises Start per sandbox directory
}

func init() {
	driver.Register(driver.Registration{
		Name:    Name,
		Summary: "user, mount, pid, net, ipc, uts and cgroup namespaces, cgroup limits, seccomp, Landlock",
		Auto:    1,
		Factory: func(o driver.Options) (driver.Driver, error) {
			return New(Config{Dir: o.Dir, AgentPath: o.AgentPath, WarmPool: o.WarmPool, CgroupParent: o.CgroupParent,
				ReserveMemoryMB: o.ReserveMemoryMB, ReservePids: o.ReservePids, Storage: o.Storage, FreezeTimeout: o.FreezeTimeout, Log: o.Log})
		},
	})
}

// New checks cfg and returns the driver; it touches nothing on the host
// (Open does).
func New(cfg Config) (*Driver, error) {
	if cfg.Dir == "" || cfg.AgentPath == "" {
		return nil, fmt.Errorf("namespace driver: Dir and AgentPath are required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("namespace driver: %w", err)
	}
	agent, err := filepath.Abs(cfg.AgentPath)
	if err != nil {
		return nil, fmt.Errorf("namespace driver: %w", err)
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = "hutch"
	}
	if cfg.FreezeTimeout == 0 {
		cfg.FreezeTimeout = DefaultFreezeTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Driver{cfg: cfg, dir: dir, agentPath: agent, log: cfg.Log, rootless: os.Geteuid() != 0,
		trash: launch.NewTrash(filepath.Join(dir, ".trash"))}, nil
}

// Open checks the host and prepares it: the directory, the uid registry,
// the host's inotify limits, the cgroup manager and the parent group's
// caps (capParent), and the host template. As
// root it gives each sandbox its own host uids and cgroups; otherwise it
// runs rootless where the kernel lets unprivileged users make user
// namespaces. It starts the warm pool last.
func (d *Driver) Open(ctx context.Context) error {
	if d.rootless {
		if err := userNamespacesAllowed(); err != nil {
			return fmt.Errorf("namespace driver: not root, and %w: %w", err, driver.ErrHostUnsupported)
		}
	}
	if err := launch.CheckStatic(d.agentPath); err != nil {
		return fmt.Errorf("namespace driver: %w", err)
	}
	var err error
	if d.agentInfo, err = launch.Protocol(ctx, d.agentPath); err != nil {
		return fmt.Errorf("namespace driver: %w", err)
	}
	d.log.Info("agent binary", "path", d.agentPath, "protocol", d.agentInfo.Version(), "features", d.agentInfo.Features)
	d.probe = confine.Probe()
	if err := d.makeDir(); err != nil {
		return fmt.Errorf("namespace driver: %w", err)
	}
	if d.store = d.cfg.Storage; d.store == nil {
		if d.store, err = probeStorage(d.dir); err != nil {
			// A copy backend works anywhere; only speed and quotas go.
			d.log.Warn("namespace driver: storage probe failed: sandboxes' files are copied byte by byte, with no disk limit", "err", err)
			d.store = storage.Open(storage.Info{})
		}
	}
	if d.rootless {
		d.cgErr = errors.New("hutch is not root")
	} else {
		if d.ids, err = hostids.New(hostids.Registry, idBase, idSize, idRanges); err != nil {
			return fmt.Errorf("namespace driver: %w", err)
		}
		d.reaper = newReaper(d.ids)
		if err := raiseHostLimits(d.log); err != nil {
			return fmt.Errorf("namespace driver: %w", err)
		}
		if d.idmapErr = idmap.Supported(d.dir); d.idmapErr == nil {
			d.mapped = true
		} else {
			d.log.Warn("namespace driver: no id-mapped mounts here: sandboxes keep their files under their host ids, and none starts from an image", "err", d.idmapErr)
		}
		if d.cg, err = cgroups.New(d.cfg.CgroupParent); err != nil {
			d.cg, d.cgErr = nil, err
		} else {
			d.capParent()
		}
	}
	if d.tmpl, err = buildTemplate(filepath.Join(d.dir, ".templates"), d.agentPath, d.log); err != nil {
		return fmt.Errorf("namespace driver: %w", err)
	}
	if d.base, err = buildImageBase(filepath.Join(d.dir, ".templates"), d.agentPath, d.log); err != nil {
		return fmt.Errorf("namespace driver: %w", err)
	}
	if err := d.loadIDs(); err != nil {
		return err
	}
	d.userLimits = userLimits(d.rootless)
	d.caps = d.capabilities()
	d.pool = newPool(d, d.cfg.WarmPool)
	return nil
}

// probeStorage picks the storage backend for dir's filesystem, trying it
// in a scratch directory it removes.
func probeStorage(dir string) (storage.Backend, error) {
	scratch, err := os.MkdirTemp(dir, ".storage-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	info, err := storage.Probe(dir, scratch)
	if err != nil {
		return nil, err
	}
	return storage.Open(info), nil
}

// capParent caps the parent cgroup, every sandbox together, at the host's
// memory and tasks (the smaller of pid_max and threads-max) less the
// control plane's reserve, so that sandboxes, whatever they were promised,
// cannot starve the control plane of memory or pids. Only a parent hutch
// made (and marked) is changed; one that was there without the mark is
// someone else's and is left alone, with a warning. A cap that fails is
// logged: admission (the sandbox service) still bounds what is promised.
func (d *Driver) capParent() {
	facts, err := hostinfo.Read()
	if err != nil {
		d.log.Warn("cgroup parent left uncapped: cannot read the host's totals", "cgroup.parent", d.cfg.CgroupParent, "err", err)
		return
	}
	memMB := hostinfo.Budget(facts.MemoryMB, d.cfg.ReserveMemoryMB)
	pids := hostinfo.Budget(facts.Tasks(), d.cfg.ReservePids)
	got, err := d.cg.CapParent(cgroups.Limits{MemoryBytes: int64(memMB) << 20, Pids: int64(pids)})
	if len(got.Capped) > 0 {
		d.log.Info("cgroup parent capped: sandboxes together", "memory_mb", memMB, "pids", pids,
			"host.memory_mb", facts.MemoryMB, "host.tasks", facts.Tasks(), "groups", got.Capped)
	}
	for _, dir := range got.Foreign {
		d.log.Warn("cgroup parent was not made by hutch (no trusted.hutch.owner mark): left uncapped; remove it while no sandbox runs, or choose another --cgroup-parent",
			"group", dir)
	}
	for _, dir := range got.Unmarked {
		d.log.Warn("cgroup parent capped but not marked as hutch's (the file system takes no trusted.* attributes): the next start will leave its limits as they are", "group", dir)
	}
	if err != nil {
		d.log.Warn("cgroup parent cap incomplete", "cgroup.parent", d.cfg.CgroupParent, "err", err)
	}
}

// Close stops the warm pool and removes its sandboxes, and waits for the
// trash to empty. Sandboxes keep running.
func (d *Driver) Close() error {
	if d.pool != nil {
		d.pool.Close()
	}
	d.trash.Wait()
	if d.reaper != nil {
		d.reaper.close()
	}
	return nil
}

// Name returns "namespace".
func (d *Driver) Name() string { return Name }

// Capabilities reports what this host lets the driver do.
func (d *Driver) Capabilities() driver.Capabilities { return d.caps }

func (d *Driver) capabilities() driver.Capabilities {
	c := driver.Capabilities{
		Isolation: api.IsolationFull,
		Templates: []string{"host"},
		StartStop: true,
		RootUser:  true,
	}
	if d.rootless {
		c.Degraded = append(c.Degraded, "namespace driver: rootless (hutch is not root): a user namespace maps only hutch's own uid, so every command runs as root inside its sandbox (hutch's unprivileged user outside) and sandboxes share that host uid")
	}
	if d.cg == nil {
		c.Degraded = append(c.Degraded, fmt.Sprintf("namespace driver: no usable cgroups (%v): memory, pids and cpu limits are not enforced", d.cgErr))
	} else {
		c.Pause = d.cg.CanFreeze()
		for _, m := range d.cg.Available() {
			switch m {
			case "memory":
				c.Limits.Memory = true
			case "pids":
				c.Limits.Pids = true
			case "cpu":
				c.Limits.CPU = true
			}
		}
		for _, m := range d.cg.Missing() {
			c.Degraded = append(c.Degraded, fmt.Sprintf("namespace driver: the cgroup %s controller is not available: that limit is not enforced", m))
		}
	}
	c.Limits.Disk = d.diskLimits()
	d.imageCaps(&c)
	c.Snapshots = d.mapped || d.rootless
	c.Volumes = d.mapped || d.rootless
	c.Degraded = append(c.Degraded, launch.KernelGaps(d.probe)...)
	if len(c.Degraded) > 0 {
		c.Isolation = api.IsolationDegraded
	}
	return c
}

// makeDir makes the driver's directory. Above it everything stays as the
// operator has it, or owner-only where hutch makes it. The directory itself
// is 0711: an agent starts in its sandbox's directory and reaches its
// template as "../.templates/…" (create.go), which takes entering this
// directory, never listing it.
func (d *Driver) makeDir() error {
	if err := os.MkdirAll(filepath.Dir(d.dir), 0o700); err != nil {
		return err
	}
	return launch.EnsureDir(d.dir, 0o711, d.log)
}

// sandboxDir is where one sandbox lives on the host.
func (d *Driver) sandboxDir(id string) string { return filepath.Join(d.dir, id) }
