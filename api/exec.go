package api

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec and of its
// streaming form.
type ExecRequest struct {
	Cmd       []string          `json:"cmd"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	TimeoutMS int               `json:"timeout_ms,omitempty"`
}

// ExecResult is the answer of a run-to-completion exec. A program that
// could not be started is an exit code (127 not found, 126 not executable)
// and Error, not an HTTP error.
type ExecResult struct {
	ExitCode        int     `json:"exit_code"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	DurationMS      float64 `json:"duration_ms"`
	TimedOut        bool    `json:"timed_out,omitempty"`
	Signal          string  `json:"signal,omitempty"`
	// OOMKilled says the out-of-memory killer killed a process of the
	// sandbox (at its memory limit) while this command ran: the command
	// itself, or something it started, most likely.
	OOMKilled bool   `json:"oom_killed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Exec stream event types.
const (
	ExecStdout = "stdout"
	ExecStderr = "stderr"
	ExecExit   = "exit"
)

// ExecEvent is one line of the NDJSON stream of
// POST /v1/sandboxes/{id}/exec/stream. Data is base64 in JSON, so output
// that is not UTF-8 arrives intact. The last event has Type "exit" and
// Exit set, with Stdout and Stderr empty.
type ExecEvent struct {
	Type string      `json:"type"`
	Data []byte      `json:"data,omitempty"`
	Exit *ExecResult `json:"exit,omitempty"`
}
