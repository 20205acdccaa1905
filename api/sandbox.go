package api

import "time"

// SandboxState is where a sandbox is in its life.
type SandboxState string

// The states of a sandbox. Creating, starting, stopping and destroying are
// transitional: the sandbox's driver is at work, and any other change
// waits for it or is refused with 409 sandbox_state_conflict.
// Paused is running with every process frozen: memory, files and open
// connections are kept, and a call that reaches it resumes it first.
// Unavailable is a sandbox that cannot be reached now, and is left
// untouched: its node stopped heartbeating (recorded, until the node
// returns and re-attaches it), or its driver is not loaded on this server
// (shown so, never recorded).
const (
	StateCreating    SandboxState = "creating"
	StateStarting    SandboxState = "starting"
	StateRunning     SandboxState = "running"
	StatePaused      SandboxState = "paused"
	StateStopping    SandboxState = "stopping"
	StateStopped     SandboxState = "stopped"
	StateDestroying  SandboxState = "destroying"
	StateDestroyed   SandboxState = "destroyed"
	StateFailed      SandboxState = "failed"
	StateUnavailable SandboxState = "unavailable"
)

// SandboxStates lists every state, in the order of a sandbox's life.
var SandboxStates = []SandboxState{StateCreating, StateStarting, StateRunning, StatePaused, StateStopping, StateStopped,
	StateDestroying, StateDestroyed, StateFailed, StateUnavailable}

// Isolation levels a driver reports.
const (
	IsolationFull     = "full"
	IsolationDegraded = "degraded"
)

// Limits are the resource limits of a sandbox. Zero means the server default.
type Limits struct {
	MemoryMB int     `json:"memory_mb,omitempty"`
	CPU      float64 `json:"cpu,omitempty"`
	Pids     int     `json:"pids,omitempty"`
	// DiskMB caps the sandbox's own files (its root's writable layer).
	// Where the data directory's filesystem has a quota the driver uses
	// (btrfs qgroups) a write past it fails with EDQUOT inside; elsewhere
	// hutch measures the files and stops the sandbox once they pass it
	// (DiskUsage.Enforcement says which).
	DiskMB int `json:"disk_mb,omitempty"`
}

// CreateSandboxRequest is the body of POST /v1/sandboxes. Every field is
// optional.
type CreateSandboxRequest struct {
	Template string `json:"template,omitempty"`
	// Snapshot starts the sandbox with a copy of the snapshot's files, over
	// the snapshot's template (Template, if set, must be it).
	Snapshot string `json:"snapshot,omitempty"`
	// OnExpiry is what the sandbox's timeout does: "destroy", "stop"
	// (its files kept, its clock held until it is started again) or
	// "pause" (its memory kept too, until it is resumed); the server's
	// default when empty.
	OnExpiry string `json:"on_expiry,omitempty"`
	// IdleTimeoutS is how long the sandbox may go without a call or
	// process output before the server's idle action (on_idle in
	// /v1/settings) is done to it; 0 takes the server's window.
	IdleTimeoutS int `json:"idle_timeout_s,omitempty"`
	// Volumes mounts the caller's volumes; they are not part of the
	// sandbox's snapshots.
	Volumes  []VolumeMount     `json:"volumes,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Limits   *Limits           `json:"limits,omitempty"`
	TimeoutS int               `json:"timeout_s,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Root runs the sandbox's commands as root inside it, still an
	// unprivileged user on the host; by default they run as "user" (uid
	// 1000). Only drivers whose info lists the "root_user" feature offer it.
	Root bool `json:"root,omitempty"`
	// Network is the egress policy; the default is public.
	Network *NetworkPolicy `json:"network,omitempty"`
	// Driver names a driver of this server's (GET /v1/info lists them);
	// empty means the server's default.
	Driver string `json:"driver,omitempty"`
	// LimitsBestEffort accepts limits the driver cannot enforce; without
	// it such a limit is refused (400 limit_unsupported). The sandbox
	// lists the limits it does not enforce in unenforced_limits.
	LimitsBestEffort bool `json:"limits_best_effort,omitempty"`
	// NodeLabels, in a fleet of nodes, places the sandbox on a node whose
	// labels (hutch serve --node-label) include all of these; empty: any
	// node. The node that creates it is the sandbox's Node.
	NodeLabels map[string]string `json:"node_labels,omitempty"`
}

// Sandbox is a sandbox as the API shows it. Env values are never echoed.
type Sandbox struct {
	ID        string       `json:"id"`
	State     SandboxState `json:"state"`
	Template  string       `json:"template"`
	Driver    string       `json:"driver"`
	Isolation string       `json:"isolation"`
	Degraded  []string     `json:"degraded,omitempty"`
	Cwd       string       `json:"cwd"`
	Limits    Limits       `json:"limits"`
	// UnenforcedLimits names the limits set but not enforced by the
	// sandbox's driver (memory_mb, cpu, pids, disk_mb), accepted only with
	// limits_best_effort.
	UnenforcedLimits []string `json:"unenforced_limits,omitempty"`
	// TimeoutS is the sandbox's lifetime; while it is stopped, its clock
	// does not run and TimeoutS is what it has left (ExpiresAt is unset).
	TimeoutS int               `json:"timeout_s"`
	Labels   map[string]string `json:"labels,omitempty"`
	Root     bool              `json:"root,omitempty"`
	Network  NetworkPolicy     `json:"network"`
	Error    string            `json:"error,omitempty"`
	Volumes  []VolumeMount     `json:"volumes,omitempty"`
	// OnExpiry is what its timeout does: "destroy", "stop" or "pause".
	OnExpiry string `json:"on_expiry"`
	// IdleTimeoutS is its own idle window (0: the server's, in
	// /v1/settings); KeepaliveUntil keeps it from idle actions until
	// then.
	IdleTimeoutS   int        `json:"idle_timeout_s,omitempty"`
	KeepaliveUntil *time.Time `json:"keepalive_until,omitempty"`
	// PausedAt is when it was paused, while it is paused.
	PausedAt *time.Time `json:"paused_at,omitempty"`
	// Disk is what the sandbox's own files take on disk, in GET
	// /v1/sandboxes/{id} (not in lists), where its driver can tell.
	Disk *DiskUsage `json:"disk,omitempty"`
	// Node is the control plane that owns the sandbox.
	Node      string     `json:"node,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// SandboxList is a page of GET /v1/sandboxes.
type SandboxList struct {
	Sandboxes  []Sandbox `json:"sandboxes"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// DiskUsage is what a sandbox's own files (its root's writable layer)
// take on disk.
type DiskUsage struct {
	UsedBytes int64 `json:"used_bytes"`
	// LimitBytes is the cap in force; 0 for none.
	LimitBytes int64 `json:"limit_bytes"`
	// Method is how UsedBytes was measured: "qgroup" (the filesystem's
	// count, as of its last commit, up to 30 s old) or "walk".
	Method string `json:"method"`
	// Enforcement is how LimitBytes holds, when there is one: "quota"
	// (the filesystem refuses a write past it, EDQUOT) or "stop" (the
	// filesystem has no quota hutch uses: hutch measures the files on a
	// budget and stops the sandbox once they pass it, so it may write
	// past it until the next measurement).
	Enforcement string `json:"enforcement,omitempty"`
}

// How a sandbox's disk limit holds (DiskUsage.Enforcement).
const (
	DiskEnforcedByQuota = "quota"
	DiskEnforcedByStop  = "stop"
)

// KeepaliveRequest is the body of POST /v1/sandboxes/{id}/keepalive: no
// idle action is done to the sandbox for the next ForS seconds (0 ends a
// keepalive). Its timeout still runs.
type KeepaliveRequest struct {
	ForS int `json:"for_s"`
}

// TimeoutRequest is the body of POST /v1/sandboxes/{id}/timeout: the
// sandbox's lifetime from now (a running sandbox) or from its next start
// (a stopped one, whose clock does not run), at most the server's
// maximum.
type TimeoutRequest struct {
	TimeoutS int `json:"timeout_s"`
}

// What a sandbox's expiry (CreateSandboxRequest.OnExpiry) or idle window
// (Settings.OnIdle) does to it. Stop and pause hold its clock until it
// runs again.
const (
	OnExpiryDestroy = "destroy"
	OnExpiryStop    = "stop"
	OnExpiryPause   = "pause"
)
