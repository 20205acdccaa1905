package api

import "time"

// ProcessRequest is the body of POST /v1/sandboxes/{id}/processes: a
// command that runs in the background, owned by the sandbox's agent, until
// it exits or is signalled; clients come and go.
type ProcessRequest struct {
	Cmd []string          `json:"cmd"`
	Env map[string]string `json:"env,omitempty"`
	Cwd string            `json:"cwd,omitempty"`
	// Tag is the caller's own label for the process (at most 128 bytes).
	Tag string `json:"tag,omitempty"`
	// PTY runs the command on a pseudo-terminal of this size, in a session
	// of its own with the terminal as its controlling one; its output is
	// then one stream, "stdout".
	PTY *TermSize `json:"pty,omitempty"`
	// Root runs it as root inside the sandbox, as ExecRequest's Root.
	Root bool `json:"root,omitempty"`
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Process is a background process as the agent sees it. PID is the id
// used in the process paths: the process's pid inside the sandbox.
type Process struct {
	PID     int      `json:"pid"`
	Tag     string   `json:"tag,omitempty"`
	Cmd     []string `json:"cmd"`
	PTY     bool     `json:"pty,omitempty"`
	Running bool     `json:"running"`
	// ExitCode and Signal are set once it has exited: the code, or 128 +
	// the signal's number and its name when a signal ended it.
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// OutputBytes is how much it has written so far, stdout and stderr
	// together: the cursor after its last byte.
	OutputBytes int64 `json:"output_bytes"`
	// StdinOpen says its stdin still takes input.
	StdinOpen bool `json:"stdin_open"`
}

// ProcessList is the answer of GET /v1/sandboxes/{id}/processes: running
// processes and the most recent exited ones, oldest first.
type ProcessList struct {
	Processes []Process `json:"processes"`
}

// Output event types.
const (
	OutputStdout  = "stdout"
	OutputStderr  = "stderr"
	OutputDropped = "dropped"
	OutputExit    = "exit"
)

// OutputEvent is one event of a process's output stream. Output is kept
// in a bounded buffer per process and numbered by byte offset, stdout and
// stderr together: a stream starts at any cursor and says how many bytes
// were dropped (written and pushed out of the buffer before it was read)
// rather than losing them silently.
type OutputEvent struct {
	Type string `json:"type"`
	// Offset is the offset of Data's first byte; for "dropped", where the
	// stream resumes.
	Offset int64  `json:"offset"`
	Data   []byte `json:"data,omitempty"`
	// Dropped counts the bytes skipped ("dropped" events).
	Dropped int64 `json:"dropped,omitempty"`
	// Process is the exited process ("exit" events, the last of a stream).
	Process *Process `json:"process,omitempty"`
}

// OutputProtocolBinary is the WebSocket subprotocol of binary process
// output (GET …/processes/{pid}/output as a WebSocket): each binary
// message is output of one stream, its first byte the stream
// (OutputTagStdout, OutputTagStderr) and the rest the bytes, which follow
// on from the stream's cursor and the message before; text messages are
// OutputEvents as JSON: dropped and exit, which say where the stream goes
// on, and output that does not follow on (only when the cursor was past
// the end of the output), which carries its offset. A client that does not
// ask for the subprotocol gets one OutputEvent as JSON per text message.
const OutputProtocolBinary = "hutch.output.v2"

// The first byte of a binary output message: which stream the rest is.
const (
	OutputTagStdout byte = 1
	OutputTagStderr byte = 2
)

// MaxOutputMessage bounds the bytes of output in one binary message.
const MaxOutputMessage = 1 << 20

// SignalRequest is the body of POST …/processes/{pid}/signal.
type SignalRequest struct {
	// Signal is TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or
	// WINCH (a "SIG" prefix is allowed).
	Signal string `json:"signal"`
	// Group sends it to the process's whole process group.
	Group bool `json:"group,omitempty"`
}

// Terminal message types: the text messages of a terminal WebSocket
// (input and output themselves go as binary messages).
const (
	TerminalStarted = "started" // server → client: the process, first
	TerminalResize  = "resize"  // client → server: Rows and Cols
	TerminalSignal  = "signal"  // client → server: Signal, to the process group
	TerminalEOF     = "eof"     // client → server: end of input
	TerminalDropped = "dropped" // server → client: Dropped bytes of output were lost
	TerminalExit    = "exit"    // server → client: the process, last
)

// TerminalMessage is a text message of GET /v1/sandboxes/{id}/terminal and
// GET …/processes/{pid}/terminal.
type TerminalMessage struct {
	Type    string   `json:"type"`
	Rows    uint16   `json:"rows,omitempty"`
	Cols    uint16   `json:"cols,omitempty"`
	Signal  string   `json:"signal,omitempty"`
	Dropped int64    `json:"dropped,omitempty"`
	Process *Process `json:"process,omitempty"`
}
