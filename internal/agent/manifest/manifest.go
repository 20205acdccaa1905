// Package manifest owns sandbox.yaml, the file in an app's directory that
// names the processes the app runs: a web server, an optional build check
// and background workers. hutch-agent supervises what it names and the
// control plane reads it too, so this package imports only the standard
// library and the YAML decoder.
//
// Parse is the one way in: it checks the whole file against version 1 of
// the format, reports every problem with its line and field, and fills in
// the defaults. Parse is fuzzed: the file is written by whoever owns the app.
package manifest

import (
	"fmt"
	"strings"
)

// FileName is the manifest's name in an app's directory.
const FileName = "sandbox.yaml"

// MaxBytes bounds the manifest file; Parse refuses a larger one unread.
const MaxBytes = 64 << 10

// Version is the only version of the format this package reads.
const Version = 1

// Limits Parse enforces besides MaxBytes.
const (
	maxWorkers      = 32
	maxCommandBytes = 8 << 10
	maxNameBytes    = 64
	maxPathBytes    = 2 << 10
	maxProblems     = 20

	defaultHealthPath     = "/"
	defaultTimeoutSeconds = 300
	maxTimeoutSeconds     = 3600
)

// Manifest is a parsed and validated sandbox.yaml with its defaults
// applied.
type Manifest struct {
	Version int      `json:"version"`
	Web     *Web     `json:"web,omitempty"`
	Build   Build    `json:"build"`
	Workers []Worker `json:"workers,omitempty"`
}

// Web is the app's web server: a command that listens on Port.
type Web struct {
	// Command runs with /bin/sh -c.
	Command string `json:"command"`
	Port    int    `json:"port"`
	// HealthPath is where a health check sends its GET; "/" when the
	// file leaves it out.
	HealthPath string `json:"health_path"`
	// WebSocketPath, when set, is where a WebSocket handshake must
	// succeed before the app is promoted.
	WebSocketPath string `json:"websocket_path,omitempty"`
	// WebSocketProtocol is the subprotocol that handshake asks for (Vite's
	// HMR answers only "vite-hmr").
	WebSocketProtocol string `json:"websocket_protocol,omitempty"`
	// RestartAfterTask restarts the server after each task.
	RestartAfterTask bool `json:"restart_after_task,omitempty"`
}

// Build is the check that the app builds.
type Build struct {
	// Command is nil when the file leaves it out, which means the
	// preset's default; "" means skip the build check.
	Command *string `json:"command,omitempty"`
	// TimeoutSeconds bounds the build; 300 when the file leaves it out.
	TimeoutSeconds int `json:"timeout_seconds"`
}

// Worker is a background process.
type Worker struct {
	// Name matches [A-Za-z0-9_-]{1,64}, is unique among the workers and
	// is not "web".
	Name string `json:"name"`
	// Command runs with /bin/sh -c.
	Command          string `json:"command"`
	RestartAfterTask bool   `json:"restart_after_task,omitempty"`
}

// Process is one process a manifest runs.
type Process struct {
	Name, Command    string
	Web              bool
	RestartAfterTask bool
}

// Processes lists what the manifest runs: the web server first, named
// "web", then the workers in the file's order.
func (m *Manifest) Processes() []Process {
	if m == nil {
		return nil
	}
	var ps []Process
	if m.Web != nil {
		ps = append(ps, Process{
			Name:             "web",
			Command:          m.Web.Command,
			Web:              true,
			RestartAfterTask: m.Web.RestartAfterTask,
		})
	}
	for _, w := range m.Workers {
		ps = append(ps, Process{
			Name:             w.Name,
			Command:          w.Command,
			RestartAfterTask: w.RestartAfterTask,
		})
	}
	return ps
}

// Problem is one thing wrong with a manifest. Its message is written for
// the app's owner and is safe to show them.
type Problem struct {
	Line    int    `json:"line,omitempty"`  // 1-based; 0 when unknown
	Field   string `json:"field,omitempty"` // "web.port", "workers[0].name"; "" for the whole file
	Message string `json:"message"`
}

// String reads like "sandbox.yaml:3: web.port: must be from 1 to 65535".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(FileName)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is every problem Parse found, in the order of their lines. Parse
// stops looking after 20 and then says so in one last problem.
type Error struct{ Problems []Problem }

// Error reads like "sandbox.yaml:3: web.port: must be from 1 to 65535
// (and 2 more problems)".
func (e *Error) Error() string {
	switch len(e.Problems) {
	case 0:
		return FileName + ": invalid manifest"
	case 1:
		return e.Problems[0].String()
	case 2:
		return e.Problems[0].String() + " (and 1 more problem)"
	default:
		return fmt.Sprintf("%s (and %d more problems)", e.Problems[0], len(e.Problems)-1)
	}
}
