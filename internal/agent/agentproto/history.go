package agentproto

import "time"

// The file history of a directory in the sandbox (FeatureHistory): the
// agent checkpoints it, lists, compares and restores its checkpoints
// (internal/agent/history does the work). Every request names the tracked
// directory, Dir, an absolute path inside the sandbox.

// Kinds of checkpoint; a caller may name others (1 to 32 of a-z, 0-9,
// '.', '_', '-').
const (
	CheckpointTask    = "task"
	CheckpointManual  = "manual"
	CheckpointPreUndo = "pre-undo"
)

// Changes of a path between two states of a tracked directory.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// CheckpointRequest is the body of POST /history/checkpoints.
type CheckpointRequest struct {
	Dir     string `json:"dir"`
	Message string `json:"message,omitempty"`
	// Kind is CheckpointTask, CheckpointManual (the default), …
	Kind string `json:"kind,omitempty"`
}

// Checkpoint is one checkpoint of a tracked directory.
type Checkpoint struct {
	// ID is a sequence number of fixed width ("00000042"): ids sort as
	// the checkpoints were taken.
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Message   string    `json:"message,omitempty"`
	Kind      string    `json:"kind"`
	// Files counts regular files; Entries, files, directories and
	// symlinks; Bytes, the files' sizes.
	Files   int   `json:"files"`
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Parent is the checkpoint that was the newest when this one was
	// taken.
	Parent string `json:"parent,omitempty"`
	// Skipped are entries not recorded (devices, FIFOs, sockets, mount
	// points), the first hundred.
	Skipped []SkippedEntry `json:"skipped,omitempty"`
}

// SkippedEntry is a path a checkpoint left out, relative to Dir.
type SkippedEntry struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// CheckpointList is the answer of GET /history/checkpoints?dir=, newest
// first.
type CheckpointList struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// RestoreRequest is the body of POST /history/restore: the checkpoint by
// ID, or Steps back from the newest (1 is the newest).
type RestoreRequest struct {
	Dir   string `json:"dir"`
	ID    string `json:"id,omitempty"`
	Steps int    `json:"steps,omitempty"`
}

// RestoreResult is the answer of POST /history/restore: the checkpoint
// the directory now matches, the one taken of it just before
// (CheckpointPreUndo; restoring it undoes the restore), and what changed.
type RestoreResult struct {
	Restored Checkpoint `json:"restored"`
	PreUndo  Checkpoint `json:"pre_undo"`
	Changes  []Change   `json:"changes"`
}

// Change is how one path differs, relative to Dir ("." for Dir itself).
// Type is the entry's ("file", "dir", "symlink"): the newer state's, or,
// deleted, the older's.
type Change struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Type   string `json:"type"`
}

// ChangeList is the answer of GET /history/diff, sorted by path.
type ChangeList struct {
	Changes []Change `json:"changes"`
}
