// Package driver defines the isolation backends behind one interface. A
// driver owns a sandbox's life (create, start, stop, destroy, recover); once
// a sandbox runs, the control plane talks to its hutch-agent over the
// endpoint in the Handle, not through the driver.
//
// Lifecycle of a driver (Caddy's provision/validate/cleanup is the model):
// its factory (registry.go) only checks its options and has no side effect;
// Open makes every change to the host the driver needs (directories, id
// ranges, cgroups, templates, sysctls) and reports why the host cannot run
// it; Capabilities is valid once Open returned nil; Close releases what the
// driver itself runs (warm pools, background deletion) and works after a
// partial or failed Open. Sandboxes outlive Close: the next server
// re-attaches to them with Recover.
//
// Lifecycle of a sandbox: Create returns a running sandbox whose agent
// answers; Stop and Start keep its files; Destroy removes everything Create
// made even after a partial create. The sandbox service serialises the
// calls for one sandbox; a driver still refuses a Start of a sandbox whose
// agent runs (ErrConflict, code "sandbox_running"). Every call takes ctx
// first; teardown callers pass a context that outlives the request.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// ErrHostUnsupported marks an Open or Probe error that no setting of hutch
// can fix: the kernel or the host lacks what the driver needs (user
// namespaces turned off, say). "--driver auto" falls back to the next
// driver only on such an error; any other is a fixable cause, and stops the
// start with the fix in its message.
var ErrHostUnsupported = errors.New("this host cannot run the driver")

// ErrNotConfigured marks an Open error of a driver that was not asked
// for and has nothing to run on (the kubernetes driver without a
// cluster): the server leaves it out without a warning.
var ErrNotConfigured = errors.New("the driver is not configured")

// HandleVersion is the Handle format this build writes.
const HandleVersion = 1

// Driver is an isolation backend.
type Driver interface {
	Name() string
	// Open prepares the host for the driver; see the package comment.
	Open(ctx context.Context) error
	// Close stops what the driver runs for itself; sandboxes keep running.
	Close() error
	// Capabilities says what the driver can do on this host, once Open
	// returned nil.
	Capabilities() Capabilities
	// Create builds and starts a sandbox; on return its agent is ready.
	// On error nothing of it is left behind.
	Create(ctx context.Context, spec Spec) (Handle, error)
	// Start starts a stopped sandbox again, keeping its files. A sandbox
	// whose agent still runs is refused with errdefs.ErrConflict.
	Start(ctx context.Context, h Handle) (Handle, error)
	// Stop ends every process of the sandbox and keeps its files.
	Stop(ctx context.Context, h Handle) error
	// Destroy removes every process, mount, cgroup and directory of the
	// sandbox. Destroying what is already gone is not an error.
	Destroy(ctx context.Context, h Handle) error
	// Recover re-attaches to a sandbox after a control-plane restart.
	Recover(ctx context.Context, h Handle) (Status, error)
	// Status reports whether the sandbox is alive.
	Status(ctx context.Context, h Handle) (Status, error)
}

// Snapshotter is implemented by drivers that can copy a sandbox's files
// and start sandboxes from such a copy (Spec.Snapshot); Capabilities
// says Snapshots.
type Snapshotter interface {
	// Snapshot copies the sandbox's own files (its root over its template)
	// into dst, which must not exist, consistently: a running sandbox's
	// processes are frozen from before the copy until after it. On error
	// nothing is left at dst.
	Snapshot(ctx context.Context, h Handle, dst string) (SnapshotStats, error)
	// Restore makes the sandbox's files exactly those of the snapshot src:
	// its processes end, its files are replaced, and it runs again. It
	// returns the new handle.
	Restore(ctx context.Context, h Handle, src string) (Handle, error)
	// RemoveSnapshot removes a snapshot Snapshot made.
	RemoveSnapshot(dir string) error
}

// SnapshotStats says what a snapshot took and holds.
type SnapshotStats struct {
	// Pause is how long the sandbox's processes were frozen; Frozen says
	// whether the kernel reported them all stopped (false: there was no
	// freezer, or a task would not stop).
	Pause  time.Duration
	Frozen bool
	Bytes  int64
	Files  int64
	// Method is how the files were copied: "subvolume", "reflink" or
	// "copy".
	Method string
}

// DiskMeter is implemented by drivers that can tell how many bytes a
// sandbox's own files take, and the cap in force (0: none).
type DiskMeter interface {
	DiskUsage(ctx context.Context, h Handle) (DiskUsage, error)
}

// DiskUsage is what a sandbox's own files take.
type DiskUsage struct {
	Bytes, Limit int64
	// Method is how Bytes was measured: "qgroup" or "walk".
	Method string
}

// Prober is implemented by drivers that can prove they work on this host
// by creating, using and destroying a test sandbox. "--driver auto" probes
// a driver before it makes it the default.
type Prober interface {
	Probe(ctx context.Context) error
}

// OOMCounter is implemented by drivers that can tell how many times the
// kernel's out-of-memory killer has killed a process of a sandbox.
type OOMCounter interface {
	OOMKills(ctx context.Context, h Handle) (uint64, error)
}

// Egresser is implemented by drivers whose sandboxes reach out only
// through the control plane: ListenEgress opens the listener, one per
// sandbox, that the sandbox's agent forwards its proxy connections to (or
// hands over: a connection it returns may be the sandbox's own socket). The
// listener itself tells the control plane which sandbox is calling.
type Egresser interface {
	ListenEgress(ctx context.Context, h Handle) (net.Listener, error)
}

// Pauser is implemented by drivers that can freeze every process of a
// sandbox, its agent included, and thaw them; Capabilities says Pause.
// Both are idempotent: pausing a paused sandbox or resuming a running one
// does nothing. A paused sandbox keeps its memory and its connections; its
// agent does not answer until it is resumed. Stop and Destroy end a paused
// sandbox as they end a running one.
type Pauser interface {
	// Pause fails, leaving the sandbox running, when the kernel does not
	// report every task frozen within a short wait.
	Pause(ctx context.Context, h Handle) error
	Resume(ctx context.Context, h Handle) error
}

// Meter is implemented by drivers that can tell what a running or paused
// sandbox uses now (GET /v1/sandboxes/{id}/metrics).
type Meter interface {
	Stats(ctx context.Context, h Handle) (Stats, error)
}

// Stats is what a sandbox uses now. Unsupported names each figure the
// driver cannot measure on this host ("cpu", "memory", "pids",
// "network"); those are left zero.
type Stats struct {
	CPUUsageNS              uint64
	MemoryBytes, MemoryPeak int64
	MemoryLimit             int64
	Pids, PidsLimit         int
	RxBytes, TxBytes        uint64
	RxPackets, TxPackets    uint64
	Unsupported             []string
}

// Adopter is implemented by drivers whose sandboxes run outside the node
// that made them (a cluster's Pods), where every node that opened the
// driver reaches them: a lost node's sandboxes are taken over by another
// node rather than left unavailable until it returns. Adopt marks what
// the driver made of the sandbox as this node's; the node then
// re-attaches to it with Recover.
type Adopter interface {
	Adopt(ctx context.Context, h Handle) error
}

// Sweeper is implemented by drivers that can find what they made outside
// the store (directories, cgroups, processes) and remove what known does not
// claim. It runs at start-up and on a timer.
type Sweeper interface {
	Sweep(ctx context.Context, known func(sandboxID string) bool) (removed []string, err error)
}

// Capabilities say what a driver can do; the API refuses a request a driver
// cannot serve before calling it.
type Capabilities struct {
	Isolation string   // api.IsolationFull or api.IsolationDegraded
	Degraded  []string // each missing protection, in words a person acts on
	Templates []string
	StartStop bool
	// RootUser says the driver can run a sandbox's commands as root inside
	// it (Spec.Root), still unprivileged on the host.
	RootUser bool
	// Limits says which limits the driver enforces.
	Limits LimitCaps
	// Images says the driver starts sandboxes from images (Spec.Image):
	// shared layers when SharedLayers is also set, else only flattened
	// ones.
	Images       bool
	SharedLayers bool
	// Pause says the driver is a Pauser on this host (it has a freezer).
	Pause bool
	// Snapshots says the driver is a Snapshotter on this host;
	// SharedSnapshots that its snapshots are kept off any node's disk
	// (the kubernetes driver's registry), so any node of a fleet starts
	// a sandbox from one or restores one, whichever node took it.
	Snapshots       bool
	SharedSnapshots bool
	// Volumes says the driver mounts volumes (Spec.Volumes).
	Volumes bool
	// UnconfinedEgress says the driver's sandboxes reach the network
	// directly, not through hutch's egress proxy: only public egress is
	// accepted for them (network_policy_unsupported otherwise).
	UnconfinedEgress bool
}

// LimitCaps says which of api.Limits a driver enforces.
type LimitCaps struct {
	Memory bool
	CPU    bool
	Pids   bool
	Disk   bool
}

// Spec is what to create. Token is the per-sandbox agent token the caller
// generated; the driver hands it to the agent in its envelope.
type Spec struct {
	SandboxID    string
	TenantID     string
	Template     string
	Env          map[string]string
	Cwd          string // "" means the driver's workspace
	Limits       api.Limits
	Token        string
	MaxFileBytes int64
	// MaxTarBytes bounds what one tar upload unpacks in the sandbox (its
	// files' sizes, sparse holes included); zero leaves the agent's default.
	MaxTarBytes int64
	// Root runs the sandbox's commands as root inside it; only drivers
	// whose Capabilities say RootUser accept it.
	Root bool
	// Volumes are directories of the host (a volume's, made by the
	// volume service with the sandbox's own ids on disk) mounted inside.
	Volumes []Volume
	// Snapshot, when set, is a directory Snapshotter.Snapshot made: the
	// sandbox's files start as a copy of it (over the same template).
	// TakeSnapshot lets the driver take the directory itself instead of a
	// copy (the caller drops the snapshot right after).
	Snapshot     string
	TakeSnapshot bool
	// Image, when set, is what the sandbox's root is made of instead of
	// the driver's host template (Template names it, for messages); only
	// drivers whose Capabilities say Images accept it.
	Image *Image
}

// Image is an image's unpacked layers and what a sandbox started from it
// takes as its defaults.
type Image struct {
	// Layers are host directories, bottom first: layers unpacked in
	// overlayfs's form with the image's own ids (Shared), or one
	// flattened tree owned by hutch's user.
	Layers []string
	Shared bool
	// Host puts the layers over the driver's host template (a template
	// made from a snapshot of a sandbox of it) instead of over hutch's
	// base layer, with the host template's accounts and defaults.
	Host bool
	// Env ("NAME=value") is under the request's; WorkingDir is the
	// default working directory ("" for the driver's); User is who
	// commands run as unless the request asks for root.
	Env        []string
	WorkingDir string
	User       ImageUser
}

// Volume is a host directory mounted into a sandbox at Path.
type Volume struct {
	Dir      string
	Path     string
	ReadOnly bool
}

// ImageUser is an image's user, as its own /etc/passwd names it.
type ImageUser struct {
	Name     string
	UID, GID uint32
	Home     string
}

// Handle is the versioned, opaque record of a created sandbox. The caller
// persists it and passes it back; only Agent and Workdir are read by the
// control plane.
type Handle struct {
	Version int    `json:"v"`
	Driver  string `json:"driver"`
	// Agent is where the sandbox's agent listens, e.g. unix + a path.
	Agent Endpoint `json:"agent"`
	// Token authenticates the control plane and the agent to each other.
	Token string `json:"token"`
	// Workdir is the sandbox's default directory as its processes see it.
	Workdir string `json:"workdir"`
	// State is the driver's own data (pids, uids, paths).
	State json.RawMessage `json:"state,omitempty"`
}

// Endpoint is a dialable address, and the protocol and features of the
// agent there (zero for an agent of protocol 1, or a handle recorded
// before protocols were).
type Endpoint struct {
	Network string `json:"network"`
	Address string `json:"address"`
	agentproto.Info
}

// Status is what a driver sees of a sandbox.
type Status struct {
	State  State
	Detail string
	// Waited, of a running sandbox, is how long its agent's threads have
	// waited for a CPU in all (hostproc.Waited), as Status reports it; 0
	// where the driver cannot tell, and from Recover, which asks it of
	// every sandbox at a start and has no use for it. The agent check tells a starved agent from a hung
	// one by its growth.
	Waited time.Duration
}

// State is a driver-level state.
type State string

// Driver-level states.
const (
	Running State = "running"
	Stopped State = "stopped"
	Gone    State = "gone"
)
