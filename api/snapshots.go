package api

import "time"

// Event types about snapshots; each carries "snapshot" (its id) and
// "sandbox" in Data.
const (
	EventSnapshotCreated = "snapshot.created"
	EventSnapshotDeleted = "snapshot.deleted"
	EventSandboxRestored = "sandbox.restored"
)

// MaxForkCount bounds one fork.
const MaxForkCount = 32

// Snapshot is a copy of a sandbox's files, as the API shows it. It keeps
// every file (deletions, modes, owners, links, binary content) of the
// sandbox's root over its template, not its processes or memory; it
// outlives the sandbox.
type Snapshot struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	SandboxID string `json:"sandbox_id"`
	Template  string `json:"template"`
	Driver    string `json:"driver"`
	// Bytes and Files are what the snapshot holds: the sandbox's own
	// files, not its template's.
	Bytes int64 `json:"bytes"`
	Files int64 `json:"files"`
	// PauseMS is how long the sandbox's processes were frozen while its
	// files were captured (0 for a stopped sandbox).
	PauseMS   int64     `json:"pause_ms"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateSnapshotRequest is the body of POST /v1/sandboxes/{id}/snapshots.
type CreateSnapshotRequest struct {
	Name string `json:"name,omitempty"`
}

// SnapshotList is the body of GET /v1/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// RestoreRequest is the body of POST /v1/sandboxes/{id}/restore: the
// sandbox's processes end, its files become the snapshot's, and it runs
// again.
type RestoreRequest struct {
	Snapshot string `json:"snapshot"`
}

// ForkRequest is the body of POST /v1/sandboxes/{id}/fork: Count new
// sandboxes, each starting with a copy of the sandbox's files as they are
// now, with its template, env, working directory, limits, user and
// network policy. Processes and memory are not carried.
type ForkRequest struct {
	Count int `json:"count"`
	// Labels are set on each fork, over the sandbox's own.
	Labels map[string]string `json:"labels,omitempty"`
}

// ForkResult is the answer to a fork.
type ForkResult struct {
	Sandboxes []Sandbox `json:"sandboxes"`
	// PauseMS is how long the sandbox's processes were frozen.
	PauseMS int64 `json:"pause_ms"`
}
