package agentproto

import "time"

// The wire types of the protocol: what the control plane sends the agent
// and what the agent answers. They are the agent's contract, not the
// public /v1 API's (package api): a field added to the API does not reach
// an agent until it is added here, behind a feature the agent reports.
// Their JSON is protocol 1's, so an agent of either protocol decodes what
// the other side sends; both sides ignore fields they do not know.

// ExecRequest is the body of POST /exec, and the command of a background
// process.
type ExecRequest struct {
	Cmd       []string          `json:"cmd"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	TimeoutMS int               `json:"timeout_ms,omitempty"`
	// Root runs the command as root (uid and gid 0 of the sandbox's user
	// namespace) instead of the sandbox's user (FeatureRoot).
	Root bool `json:"root,omitempty"`
}

// ExitStatus is how a command ended: the last event of an exec stream. A
// program that could not be started is an exit code (127 not found, 126
// not executable) and Error.
type ExitStatus struct {
	ExitCode   int     `json:"exit_code"`
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out,omitempty"`
	Signal     string  `json:"signal,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Stream names of output, in events and in frames.
const (
	Stdout  = "stdout"
	Stderr  = "stderr"
	Exit    = "exit"
	Dropped = "dropped"
)

// ExecEvent is one line of POST /exec's NDJSON answer (protocol 1, and
// protocol 2 when the client does not accept frames).
type ExecEvent struct {
	Type string      `json:"type"`
	Data []byte      `json:"data,omitempty"`
	Exit *ExitStatus `json:"exit,omitempty"`
}

// ProcessRequest is the body of POST /processes.
type ProcessRequest struct {
	Cmd []string          `json:"cmd"`
	Env map[string]string `json:"env,omitempty"`
	Cwd string            `json:"cwd,omitempty"`
	Tag string            `json:"tag,omitempty"`
	PTY *TermSize         `json:"pty,omitempty"`
	// Root, as ExecRequest's (FeatureRoot).
	Root bool `json:"root,omitempty"`
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Process is a background process as the agent sees it.
type Process struct {
	PID         int        `json:"pid"`
	Tag         string     `json:"tag,omitempty"`
	Cmd         []string   `json:"cmd"`
	PTY         bool       `json:"pty,omitempty"`
	Running     bool       `json:"running"`
	ExitCode    *int       `json:"exit_code,omitempty"`
	Signal      string     `json:"signal,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	OutputBytes int64      `json:"output_bytes"`
	StdinOpen   bool       `json:"stdin_open"`
}

// ProcessList is the answer of GET /processes.
type ProcessList struct {
	Processes []Process `json:"processes"`
}

// OutputEvent is one line of GET /processes/{pid}/output's NDJSON answer:
// Data at Offset of the process's output, Dropped bytes lost before
// Offset, or the process as it ended.
type OutputEvent struct {
	Type    string   `json:"type"`
	Offset  int64    `json:"offset"`
	Data    []byte   `json:"data,omitempty"`
	Dropped int64    `json:"dropped,omitempty"`
	Process *Process `json:"process,omitempty"`
}

// SignalRequest is the body of POST /processes/{pid}/signal.
type SignalRequest struct {
	Signal string `json:"signal"`
	Group  bool   `json:"group,omitempty"`
}

// File types of FileInfo.Type.
const (
	FileRegular = "file"
	FileDir     = "dir"
	FileSymlink = "symlink"
	FileOther   = "other"
)

// FileInfo describes one path, as the sandbox sees it.
type FileInfo struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModTime    time.Time `json:"mod_time"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// FileList is the answer of GET /files/list.
type FileList struct {
	Path    string     `json:"path"`
	Entries []FileInfo `json:"entries"`
}

// MkdirRequest is the body of POST /files/mkdir.
type MkdirRequest struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"`
}

// MoveRequest is the body of POST /files/move.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// TarResult is the answer of PUT /files/tar.
type TarResult struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Watch event types.
const (
	WatchCreate   = "create"
	WatchWrite    = "write"
	WatchRemove   = "remove"
	WatchRename   = "rename"
	WatchOverflow = "overflow"
)

// WatchEvent is one change under a watched directory.
type WatchEvent struct {
	Type    string    `json:"type"`
	Path    string    `json:"path,omitempty"`
	OldPath string    `json:"old_path,omitempty"`
	IsDir   bool      `json:"is_dir,omitempty"`
	Time    time.Time `json:"time"`
}

// Error is every error answer's body.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an error's stable code and message.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Event types of GET /events.
const (
	// EventHello is the first event of a feed: Seq is the last event's
	// number so far (0 before any).
	EventHello = "hello"
	// EventProcessExited: a background process ended (Process).
	EventProcessExited = "process.exited"
)

// Event is one line of GET /events?after=N, the agent's pushed events
// (FeatureEvents): a hello, then every retained event numbered above
// after, then each new one as it happens.
type Event struct {
	Type    string   `json:"type"`
	Seq     uint64   `json:"seq"`
	Process *Process `json:"process,omitempty"`
}
