package api

import "time"

// SandboxState is where a sandbox is in its life.
type SandboxState string

// The states of a sandbox.
const (
	StateCreating  SandboxState = "creating"
	StateRunning   SandboxState = "running"
	StateStopped   SandboxState = "stopped"
	StateFailed    SandboxState = "failed"
	StateDestroyed SandboxState = "destroyed"
)

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
}

// CreateSandboxRequest is the body of POST /v1/sandboxes. Every field is
// optional.
type CreateSandboxRequest struct {
	Template string            `json:"template,omitempty"`
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
}

// Sandbox is a sandbox as the API shows it. Env values are never echoed.
type Sandbox struct {
	ID        string            `json:"id"`
	State     SandboxState      `json:"state"`
	Template  string            `json:"template"`
	Driver    string            `json:"driver"`
	Isolation string            `json:"isolation"`
	Degraded  []string          `json:"degraded,omitempty"`
	Cwd       string            `json:"cwd"`
	Limits    Limits            `json:"limits"`
	TimeoutS  int               `json:"timeout_s"`
	Labels    map[string]string `json:"labels,omitempty"`
	Root      bool              `json:"root,omitempty"`
	Network   NetworkPolicy     `json:"network"`
	Error     string            `json:"error,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

// SandboxList is a page of GET /v1/sandboxes.
type SandboxList struct {
	Sandboxes  []Sandbox `json:"sandboxes"`
	NextCursor string    `json:"next_cursor,omitempty"`
}
