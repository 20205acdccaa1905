package api

import (
	"encoding/base64"
	"fmt"
)

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec and of its
// streaming form.
type ExecRequest struct {
	Cmd       []string          `json:"cmd"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	TimeoutMS int               `json:"timeout_ms,omitempty"`
	// Root runs the command as root (uid and gid 0 inside the sandbox)
	// instead of the sandbox's user. Root inside is confined like the rest
	// of the sandbox; a driver that cannot give it (the process driver)
	// answers 403 root_unavailable.
	Root bool `json:"root,omitempty"`
	// OutputEncoding says how a run-to-completion exec carries Stdout and
	// Stderr: "" or "utf8" (the default) as text when the output is valid
	// UTF-8 and as base64 when it is not, "base64" as base64 always. The
	// stream form carries bytes as base64 whatever it says.
	OutputEncoding string `json:"output_encoding,omitempty"`
}

// Output encodings: of ExecRequest.OutputEncoding and of
// ExecResult.StdoutEncoding and StderrEncoding.
const (
	EncodingUTF8   = "utf8"
	EncodingBase64 = "base64"
)

// ExecResult is the answer of a run-to-completion exec. A program that
// could not be started is an exit code (127 not found, 126 not executable)
// and Error, not an HTTP error.
//
// Stdout and Stderr hold the output's bytes exactly: as the text itself
// when StdoutEncoding (StderrEncoding) is empty, which the server does
// when the output is valid UTF-8, and as standard base64 when it is
// "base64", which it does when the output is not valid UTF-8 or the
// request asked for base64. The two streams are encoded independently.
// StdoutBytes and StderrBytes decode either form.
type ExecResult struct {
	ExitCode        int     `json:"exit_code"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutEncoding  string  `json:"stdout_encoding,omitempty"`
	StderrEncoding  string  `json:"stderr_encoding,omitempty"`
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

// StdoutBytes returns the bytes the command wrote to stdout (as far as
// they were kept), whichever encoding carried them.
func (r *ExecResult) StdoutBytes() ([]byte, error) {
	return decodeOutput("stdout", r.Stdout, r.StdoutEncoding)
}

// StderrBytes returns the bytes the command wrote to stderr (as far as
// they were kept), whichever encoding carried them.
func (r *ExecResult) StderrBytes() ([]byte, error) {
	return decodeOutput("stderr", r.Stderr, r.StderrEncoding)
}

// Decode turns a result as the server sent it into the bytes themselves:
// Stdout and Stderr then hold exactly what the command wrote (a Go string
// holds any bytes, UTF-8 or not) and both encodings are empty. A result
// whose encodings are empty is left as it is.
func (r *ExecResult) Decode() error {
	out, err := r.StdoutBytes()
	if err != nil {
		return err
	}
	errb, err := r.StderrBytes()
	if err != nil {
		return err
	}
	r.Stdout, r.StdoutEncoding = string(out), ""
	r.Stderr, r.StderrEncoding = string(errb), ""
	return nil
}

func decodeOutput(name, s, encoding string) ([]byte, error) {
	switch encoding {
	case "", EncodingUTF8:
		return []byte(s), nil
	case EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s: bad base64: %w", name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s: unknown encoding %q", name, encoding)
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
