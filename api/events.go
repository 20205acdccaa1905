package api

import "time"

// Event types. A sandbox's life shows as created, then any number of
// stopped and started, then destroyed; failed and expired say why a
// sandbox ended, and oom that a process in it was killed for memory.
const (
	EventSandboxCreated   = "sandbox.created"
	EventSandboxStarted   = "sandbox.started"
	EventSandboxStopped   = "sandbox.stopped"
	EventSandboxDestroyed = "sandbox.destroyed"
	EventSandboxFailed    = "sandbox.failed"
	EventSandboxExpired   = "sandbox.expired"
	EventSandboxOOM       = "sandbox.oom"
	// EventSandboxExpiring comes a while (hutch serve --expiry-warning)
	// before a running sandbox's timeout ends; it carries "expires_at" and
	// "on_expiry".
	EventSandboxExpiring = "sandbox.expiring"
	// EventSandboxTimeout says the sandbox's lifetime was set (POST
	// /v1/sandboxes/{id}/timeout); it carries "timeout_s" and, for a
	// running sandbox, "expires_at".
	EventSandboxTimeout = "sandbox.timeout"
	// EventSandboxDiskFull says the sandbox's files reached its disk
	// limit (writes fail with EDQUOT inside, or, where the filesystem has
	// no quota, the sandbox is stopped); it carries "used_bytes" and
	// "limit_bytes", and comes again only after usage fell below 90%. A
	// sandbox stopped for its disk has a sandbox.stopped whose "reason"
	// is "disk_limit" (past its own limit) or "disk_quota" (it grew while
	// its tenant was past its disk_mb quota), with "used_bytes" and
	// "limit_bytes".
	EventSandboxDiskFull = "sandbox.disk_full"
	// EventSandboxPaused and EventSandboxResumed say the sandbox's
	// processes were frozen or thawed; both carry "reason": "request",
	// "idle", "expiry", "memory_pressure", or for a resume "auto" (a call
	// reached the paused sandbox; then also "op", the call).
	EventSandboxPaused  = "sandbox.paused"
	EventSandboxResumed = "sandbox.resumed"
	// EventSandboxIdle says the sandbox went without a call or process
	// output for its idle window; it carries "idle_s", "action" (what was
	// done: pause, stop or destroy) and "reason" ("idle" or
	// "memory_pressure", when low host memory shrank the window).
	EventSandboxIdle = "sandbox.idle"
	// EventSandboxUnavailable says the node that runs the sandbox
	// stopped heartbeating (it carries "node"): the sandbox is left as
	// it is, unreachable, until its node returns and re-attaches it,
	// which EventSandboxAvailable says.
	EventSandboxUnavailable = "sandbox.unavailable"
	EventSandboxAvailable   = "sandbox.available"
)

// Process event types, about a background process of a sandbox (POST
// /v1/sandboxes/{id}/processes).
//
// process.started carries, in Data, "pid" (the process's pid inside the
// sandbox) and "tag" (the caller's label; may be empty).
//
// process.exited carries "pid" and "tag" as above, "exit_code" (the
// code, or 128 + the signal's number when a signal ended it), "signal"
// (the signal's name, such as "SIGKILL", when a signal ended it; else
// empty) and "duration_ms" (how long it ran, in milliseconds).
const (
	EventProcessStarted = "process.started"
	EventProcessExited  = "process.exited"
)

// EventEventsDropped says that events of one sandbox were not recorded:
// each sandbox may cause only so many events a second, beyond a burst,
// in its tenant's log; the lifecycle events (created, started, stopped,
// destroyed, failed, expired) are always recorded. It comes once the
// sandbox has been quiet for a few seconds (at least once a minute while
// it is not), and carries "dropped" (how many), "types" (how many of each
// type) and "first_at" and "last_at" (RFC 3339 times of the first and
// last one dropped).
const EventEventsDropped = "events.dropped"

// Event is one entry of a tenant's append-only event log. IDs are ULIDs
// that increase in the order events were recorded, so the last ID a
// reader saw is where it resumes (the after parameter). SandboxID is empty
// for an event about the tenant rather than one sandbox. Message is safe
// to show a person; Data holds small structured details (an exit status,
// a count), its numbers as JSON numbers.
//
// The event routes also stream events, when asked with Accept:
// text/event-stream: every event after the Last-Event-ID header (or the
// after parameter), then each new one as it is recorded. Each
// Server-Sent Event has the Event's ID as its id, its Type as its name
// and the Event as JSON as its data.
type Event struct {
	ID        string         `json:"id"`
	SandboxID string         `json:"sandbox_id,omitempty"`
	AppID     string         `json:"app_id,omitempty"`
	Type      string         `json:"type"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// EventList is a page of GET /v1/events or GET /v1/sandboxes/{id}/events,
// oldest first. NextCursor, when set, is the after of the next page; when
// it is empty the page held everything recorded so far, and the ID of its
// last event is where to resume for later ones.
type EventList struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"next_cursor,omitempty"`
}
