package api

import "time"

// App event types, in the app's own log (GET /v1/apps/{id}/events).
// config.updated and config.deleted carry the key only, never a value.
const (
	EventAppCreated    = "app.created"
	EventAppDeleted    = "app.deleted"
	EventAppFailed     = "app.failed"
	EventAppPromoted   = "app.promoted"
	EventAppRolledBack = "app.rolled_back"
	EventAppUndone     = "app.undone"
	EventTaskStarted   = "task.started"
	EventTaskCompleted = "task.completed"
	EventTaskFailed    = "task.failed"
	EventTaskCancelled = "task.cancelled"
	EventConfigUpdated = "config.updated"
	EventConfigDeleted = "config.deleted"
	EventCheckpoint    = "checkpoint.created"
)

// App roles: which of an app's sandboxes a request reaches.
const (
	RoleLive = "live" // <app>.<apps-domain>/
	RoleDev  = "dev"  // <app>.<apps-domain>/dev/
)

// App states.
const (
	AppCreating = "creating" // its sandboxes are being made and its preset set up
	AppReady    = "ready"    // both roles' web processes serve
	AppFailed   = "failed"   // see Error; delete it and create it again
)

// Bounds of apps.
const (
	MaxAppName         = 40
	MaxTaskCommandArgs = 256
	MaxConfigKey       = 128
	MaxConfigValue     = 32 << 10
	MaxAppConfig       = 200 // entries per app
	DefaultTaskTimeout = 600
	MaxTaskTimeout     = 3600
)

// CreateAppRequest is the body of POST /v1/apps.
type CreateAppRequest struct {
	// Name is the app's host label: <name>.<apps-domain>. 1-40 of a-z, 0-9
	// and '-', starting with a letter, not ending with '-'; unique on the
	// server.
	Name string `json:"name"`
	// Preset names the starting files and processes (GET /v1/presets).
	Preset string `json:"preset"`
	// Template overrides the preset's image.
	Template string `json:"template,omitempty"`
	// Public serves the live and dev hosts to everyone; by default only
	// the tenant's keys and browser sessions reach them.
	Public bool    `json:"public,omitempty"`
	Limits *Limits `json:"limits,omitempty"`
}

// PatchAppRequest is the body of PATCH /v1/apps/{id}.
type PatchAppRequest struct {
	Public *bool `json:"public,omitempty"`
}

// App is an app as the API shows it.
type App struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Preset   string `json:"preset"`
	Template string `json:"template"`
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
	Public   bool   `json:"public"`
	// URL is the live host; DevURL the dev route on it.
	URL    string `json:"url"`
	DevURL string `json:"dev_url"`
	// Live and Dev are the sandboxes the two roles point at.
	Live string `json:"live,omitempty"`
	Dev  string `json:"dev,omitempty"`
	// PreviousLive is what live pointed at before the last promotion:
	// rollback points live at it again.
	PreviousLive string    `json:"previous_live,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// AppList is the answer of GET /v1/apps.
type AppList struct {
	Apps []App `json:"apps"`
}

// PresetList is the answer of GET /v1/presets.
type PresetList struct {
	Presets []Preset `json:"presets"`
}

// Preset is one of the server's app presets.
type Preset struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Template    string `json:"template"`
}

// Task states.
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Build check outcomes.
const (
	BuildPassed  = "passed"
	BuildFailed  = "failed"
	BuildSkipped = "skipped"
)

// CreateTaskRequest is the body of POST /v1/apps/{id}/tasks.
type CreateTaskRequest struct {
	// Command runs in the dev sandbox's app directory, with the config
	// marked for the agent in its environment.
	Command  []string `json:"command"`
	TimeoutS int      `json:"timeout_s,omitempty"`
	// Message describes the task in the app's history.
	Message string `json:"message,omitempty"`
}

// Task is one run of a command in an app's dev sandbox and its checks.
type Task struct {
	ID       string   `json:"id"`
	AppID    string   `json:"app_id"`
	Status   string   `json:"status"`
	Command  []string `json:"command"`
	Message  string   `json:"message,omitempty"`
	TimeoutS int      `json:"timeout_s"`
	// Checkpoint is the one taken before the command ran: undo to it
	// brings back the files as they were.
	Checkpoint string `json:"checkpoint,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	// BuildStatus is the build check's outcome: passed, failed or skipped.
	BuildStatus string `json:"build_status,omitempty"`
	// PreviewOK says the dev route's "/" answered 200; AppHealthy that
	// every process of the manifest runs and the health path answers.
	PreviewOK    bool         `json:"preview_ok"`
	AppHealthy   bool         `json:"app_healthy"`
	FilesChanged []FileChange `json:"files_changed"`
	DurationMS   int64        `json:"duration_ms"`
	Error        string       `json:"error,omitempty"`
	CreatedAt    time.Time    `json:"created_at"`
	StartedAt    *time.Time   `json:"started_at,omitempty"`
	EndedAt      *time.Time   `json:"ended_at,omitempty"`
}

// TaskList is the answer of GET /v1/apps/{id}/tasks.
type TaskList struct {
	Tasks []Task `json:"tasks"`
}

// FileChange is one path a task or an undo changed.
type FileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added, modified, deleted
}

// TaskLogEntry is one chunk of a task's log (GET …/tasks/{task}/log, an
// SSE "log" event whose id is the chunk's number).
type TaskLogEntry struct {
	Stream string `json:"stream"` // stdout, stderr or system (the task runner's notes)
	Text   string `json:"text"`
}

// AppLogLine is one line of an app process's log (GET
// …/processes/{name}/logs, NDJSON).
type AppLogLine struct {
	Time   time.Time `json:"time"`
	Stream string    `json:"stream"` // stdout, stderr or system (the supervisor's)
	Line   string    `json:"line"`
}

// Checkpoint kinds.
const (
	CheckpointInitial = "initial"  // the preset's files, at create
	CheckpointTask    = "task"     // before a task
	CheckpointManual  = "manual"   // on request
	CheckpointPreUndo = "pre-undo" // what an undo replaced
)

// States of an app process.
const (
	AppProcessStarting = "starting" // up for less than 2 s
	AppProcessRunning  = "running"
	AppProcessExited   = "exited"  // just ended; the supervisor decides
	AppProcessBackoff  = "backoff" // restarted after a delay
	AppProcessCrashed  = "crashed" // ended too often right after starting: not restarted until a restart or a change
	AppProcessStopped  = "stopped"
)

// Checkpoint is one saved state of an app's files.
type Checkpoint struct {
	ID        string    `json:"id"`
	Message   string    `json:"message,omitempty"`
	Kind      string    `json:"kind"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// CheckpointList is the answer of GET /v1/apps/{id}/checkpoints.
type CheckpointList struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// CreateCheckpointRequest is the body of POST /v1/apps/{id}/checkpoints.
type CreateCheckpointRequest struct {
	Message string `json:"message,omitempty"`
}

// UndoRequest is the body of POST /v1/apps/{id}/undo: Steps checkpoints
// back (1 when both are empty: the state before the last task) or to one
// checkpoint.
type UndoRequest struct {
	Steps      int    `json:"steps,omitempty"`
	Checkpoint string `json:"checkpoint,omitempty"`
}

// UndoResult is the answer of an undo.
type UndoResult struct {
	Restored Checkpoint `json:"restored"`
	// PreUndo holds the files as they were before the undo: undo to it
	// takes the undo back.
	PreUndo Checkpoint   `json:"pre_undo"`
	Changes []FileChange `json:"changes"`
}

// Check is one health check of a promotion.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// PromoteResult is the answer of POST /v1/apps/{id}/promote.
type PromoteResult struct {
	App    App     `json:"app"`
	Checks []Check `json:"checks"`
	// Snapshot is the snapshot of the live sandbox taken before the swap.
	Snapshot string `json:"snapshot,omitempty"`
}

// Config access policies: where a config value is delivered.
const (
	AccessControlPlane = "control_plane_only" // nowhere in a sandbox
	AccessRuntime      = "runtime"            // the app's processes' environment
	AccessAgent        = "agent"              // the environment of task commands
	AccessBoth         = "both"
)

// SetConfigRequest is the body of POST /v1/apps/{id}/config and, without
// Key, of PATCH /v1/apps/{id}/config/{key}.
type SetConfigRequest struct {
	Key       string  `json:"key,omitempty"`
	Value     *string `json:"value,omitempty"`
	Sensitive *bool   `json:"sensitive,omitempty"`
	Access    string  `json:"access,omitempty"`
}

// ConfigEntry is one config value as the API shows it: a sensitive value
// is never shown.
type ConfigEntry struct {
	Key       string    `json:"key"`
	Value     string    `json:"value,omitempty"`
	Sensitive bool      `json:"sensitive"`
	Access    string    `json:"access"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ConfigList is the answer of GET /v1/apps/{id}/config.
type ConfigList struct {
	Config []ConfigEntry `json:"config"`
}

// AppProcess is one process of an app's manifest as its supervisor sees it.
type AppProcess struct {
	Name         string     `json:"name"`
	Command      string     `json:"command"`
	Web          bool       `json:"web,omitempty"`
	State        string     `json:"state"`
	Pid          int        `json:"pid,omitempty"`
	Restarts     int        `json:"restarts"`
	LastExitCode *int       `json:"last_exit_code,omitempty"`
	Message      string     `json:"message,omitempty"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
}

// AppProcesses is the answer of GET /v1/apps/{id}/processes.
type AppProcesses struct {
	Role      string       `json:"role"`
	Sandbox   string       `json:"sandbox"`
	Processes []AppProcess `json:"processes"`
	// ManifestError says the manifest on disk is invalid: the last good
	// one keeps running.
	ManifestError string `json:"manifest_error,omitempty"`
}
