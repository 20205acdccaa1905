package agentproto

import (
	"time"

	"github.com/hutchdev/hutch/internal/agent/manifest"
)

// The app supervisor's wire types (FeatureApp). An app's sandbox has an
// app directory holding its manifest (manifest.FileName); once the control
// plane configures it (PUT /app), the agent runs and keeps running the
// processes the manifest names:
//
//	PUT  /app                          AppConfig → AppStatus
//	GET  /app                          AppStatus
//	POST /app/reload                   AppStatus (200 even when the manifest is invalid: see ManifestError)
//	POST /app/restart                  AppRestartRequest → AppStatus
//	POST /app/stop                     AppStatus
//	GET  /app/processes/{name}/logs    ?tail=N&follow=bool → NDJSON of LogLine
//
// Error codes: invalid_app_dir, invalid_env (400), app_not_configured
// (409), app_process_not_found (404), invalid_tail (400),
// agent_shutting_down (503).

// AppConfig is the body of PUT /app.
type AppConfig struct {
	// Dir is the app directory: a clean absolute path in the sandbox,
	// where the manifest is and where the processes run.
	Dir string `json:"dir"`
	// Env is added to the processes' environment, over the agent's base
	// environment (and under PORT, which the web process gets).
	Env map[string]string `json:"env,omitempty"`
}

// AppRestartRequest is the body of POST /app/restart: the processes to
// restart by name, every one when empty.
type AppRestartRequest struct {
	Names []string `json:"names,omitempty"`
}

// States of an AppProcess.
const (
	// AppStarting: started less than the fast-fail window ago (2 s).
	AppStarting = "starting"
	// AppRunning: started and up for longer than the fast-fail window.
	AppRunning = "running"
	// AppExited: the run just ended; its last output is being read before
	// the supervisor decides (backoff or crashed). Transient.
	AppExited = "exited"
	// AppBackoff: ended, and restarted after the delay Message names.
	AppBackoff = "backoff"
	// AppCrashed: ended too often right after starting; not restarted
	// until a restart, a changed manifest or a change of its file.
	AppCrashed = "crashed"
	// AppStopped: stopped by the supervisor (POST /app/stop), or being
	// stopped while PID is still set.
	AppStopped = "stopped"
)

// AppStatus is the answer of every /app call but the logs.
type AppStatus struct {
	// Configured is false until PUT /app and after POST /app/stop.
	Configured bool   `json:"configured"`
	Dir        string `json:"dir,omitempty"`
	// Manifest is the manifest the processes run from: the last good one
	// read, which goes on running while the file is invalid or missing.
	Manifest *manifest.Manifest `json:"manifest,omitempty"`
	// ManifestError says why the file as it is now is not running: set
	// while it is missing or invalid, nil once a good one is read.
	ManifestError *ManifestError `json:"manifest_error,omitempty"`
	// Processes are the running manifest's processes, web first, then the
	// workers in the manifest's order.
	Processes []AppProcess `json:"processes"`
}

// Codes of a ManifestError.
const (
	ManifestMissing    = "manifest_missing"
	ManifestInvalid    = "manifest_invalid"
	ManifestTooLarge   = "manifest_too_large"
	ManifestUnreadable = "manifest_unreadable"
)

// ManifestError is why the manifest file was not taken: Code is one of
// the Manifest… codes; Problems, for manifest_invalid, locate each
// problem in the file.
type ManifestError struct {
	Code     string             `json:"code"`
	Message  string             `json:"message"`
	Problems []manifest.Problem `json:"problems,omitempty"`
}

// Error is the message, which names the file and the first problem's
// line.
func (e *ManifestError) Error() string { return e.Message }

// AppProcess is one supervised process.
type AppProcess struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Web     bool   `json:"web"`
	// Port is the web process's port (its PORT), 0 for a worker.
	Port  int    `json:"port,omitempty"`
	State string `json:"state"`
	// PID is the running process's (its process group's), 0 when none
	// runs.
	PID int `json:"pid,omitempty"`
	// Restarts counts the starts after the first since the process was
	// last defined (a changed command, port or environment starts anew).
	Restarts       int        `json:"restarts"`
	LastExitCode   *int       `json:"last_exit_code,omitempty"`
	LastExitSignal string     `json:"last_exit_signal,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	LastExitAt     *time.Time `json:"last_exit_at,omitempty"`
	// Message says why it crashed, or when a backoff ends.
	Message string `json:"message,omitempty"`
}

// LogSystem is the stream of a LogLine the supervisor wrote itself (a
// restart marker, a crash).
const LogSystem = "system"

// LogLine is one line of GET /app/processes/{name}/logs: output of the
// process (Stream Stdout or Stderr) or the supervisor's note about it
// (LogSystem), without its newline.
type LogLine struct {
	Time   time.Time `json:"time"`
	Stream string    `json:"stream"`
	Line   string    `json:"line"`
}
