package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
)

// Apps are the layer above sandboxes (/v1/apps): a named app with a live
// and a dev sandbox, tasks that run commands in dev, file checkpoints,
// promotion of dev to live, config and events.

// Presets lists the server's app presets (the preset of CreateApp).
func (c *Client) Presets(ctx context.Context) ([]api.Preset, error) {
	var out api.PresetList
	if err := c.do(ctx, http.MethodGet, "/v1/presets", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Presets, nil
}

// CreateApp starts making an app: it comes back in state creating while
// its sandboxes are made (WaitApp waits for the end). A name in use is an
// *Error with code app_exists (409); a bad one invalid_app_name; an
// unknown preset unknown_preset.
func (c *Client) CreateApp(ctx context.Context, req api.CreateAppRequest) (*api.App, error) {
	var out api.App
	if err := c.do(ctx, http.MethodPost, "/v1/apps", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Apps lists the caller's apps by name.
func (c *Client) Apps(ctx context.Context) (*api.AppList, error) {
	var out api.AppList
	if err := c.do(ctx, http.MethodGet, "/v1/apps", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// App returns one app by id.
func (c *Client) App(ctx context.Context, id string) (*api.App, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.App
	if err := c.do(ctx, http.MethodGet, appPath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchApp changes what req sets of an app.
func (c *Client) PatchApp(ctx context.Context, id string, req api.PatchAppRequest) (*api.App, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.App
	if err := c.do(ctx, http.MethodPatch, appPath(id), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteApp deletes an app, its sandboxes, config and history.
func (c *Client) DeleteApp(ctx context.Context, id string) error {
	if id == "" {
		return errNoID
	}
	return c.do(ctx, http.MethodDelete, appPath(id), nil, nil, nil)
}

// WaitApp polls an app until it is no longer creating and returns it:
// check State (ready or failed, with Error).
func (c *Client) WaitApp(ctx context.Context, id string) (*api.App, error) {
	var a *api.App
	err := poll(ctx, func() (bool, error) {
		var err error
		a, err = c.App(ctx, id)
		return err == nil && a.State != api.AppCreating, err
	})
	return a, err
}

// Promote makes what the dev sandbox runs live, once its checks pass. A
// failed check leaves live as it was and is an *Error with code
// promotion_check_failed (409) whose message names the checks.
func (c *Client) Promote(ctx context.Context, id string) (*api.PromoteResult, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.PromoteResult
	if err := c.do(ctx, http.MethodPost, appPath(id, "promote"), nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rollback points live back at what it was before the last promotion; an
// app never promoted is an *Error with code nothing_to_roll_back (409).
func (c *Client) Rollback(ctx context.Context, id string) (*api.App, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.App
	if err := c.do(ctx, http.MethodPost, appPath(id, "rollback"), nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Undo brings back the dev sandbox's files of a checkpoint: req.Steps
// back, or req.Checkpoint; the zero request undoes the last task.
func (c *Client) Undo(ctx context.Context, id string, req api.UndoRequest) (*api.UndoResult, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.UndoResult
	if err := c.do(ctx, http.MethodPost, appPath(id, "undo"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Checkpoint saves the dev sandbox's files as they are now.
func (c *Client) Checkpoint(ctx context.Context, id string, req api.CreateCheckpointRequest) (*api.Checkpoint, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Checkpoint
	if err := c.do(ctx, http.MethodPost, appPath(id, "checkpoints"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Checkpoints lists an app's checkpoints.
func (c *Client) Checkpoints(ctx context.Context, id string) (*api.CheckpointList, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.CheckpointList
	if err := c.do(ctx, http.MethodGet, appPath(id, "checkpoints"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateTask starts a command in the app's dev sandbox and returns the
// task at once; follow it with TaskLog or WaitTask. An app that runs a
// task already is an *Error with code task_running (409); one not ready
// app_not_ready.
func (c *Client) CreateTask(ctx context.Context, appID string, req api.CreateTaskRequest) (*api.Task, error) {
	if appID == "" {
		return nil, errNoID
	}
	var out api.Task
	if err := c.do(ctx, http.MethodPost, appPath(appID, "tasks"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Task returns one task of an app.
func (c *Client) Task(ctx context.Context, appID, taskID string) (*api.Task, error) {
	if appID == "" || taskID == "" {
		return nil, errNoID
	}
	var out api.Task
	if err := c.do(ctx, http.MethodGet, appPath(appID, "tasks", url.PathEscape(taskID)), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Tasks lists an app's tasks, newest first; limit 0 is the server's
// default page.
func (c *Client) Tasks(ctx context.Context, appID string, limit int) (*api.TaskList, error) {
	if appID == "" {
		return nil, errNoID
	}
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var out api.TaskList
	if err := c.do(ctx, http.MethodGet, appPath(appID, "tasks"), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelTask kills a queued or running task's command; the task ends as
// cancelled. The answer is the task as it was when asked: WaitTask for
// the end.
func (c *Client) CancelTask(ctx context.Context, appID, taskID string) (*api.Task, error) {
	if appID == "" || taskID == "" {
		return nil, errNoID
	}
	var out api.Task
	if err := c.do(ctx, http.MethodPost, appPath(appID, "tasks", url.PathEscape(taskID), "cancel"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TaskDone reports whether a task status is final: succeeded, failed or
// cancelled.
func TaskDone(status string) bool {
	switch status {
	case api.TaskSucceeded, api.TaskFailed, api.TaskCancelled:
		return true
	}
	return false
}

// WaitTask polls a task until it has ended and returns it.
func (c *Client) WaitTask(ctx context.Context, appID, taskID string) (*api.Task, error) {
	var t *api.Task
	err := poll(ctx, func() (bool, error) {
		var err error
		t, err = c.Task(ctx, appID, taskID)
		return err == nil && TaskDone(t.Status), err
	})
	return t, err
}

// Streams of a task log entry.
const (
	TaskLogStdout = "stdout"
	TaskLogStderr = "stderr"
	TaskLogSystem = "system" // what the task runner says: checks, restarts, timeouts
)

// TaskLogEntry is one chunk of a task's log.
type TaskLogEntry struct {
	// Seq is the chunk's number: TaskLog with after = Seq resumes after it.
	Seq    int64  `json:"-"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// taskLogRetries bounds how many times in a row TaskLog reopens a log
// stream that broke without anything new.
const taskLogRetries = 5

// TaskLog calls fn with each chunk of a task's log after chunk number
// after (0: from the start), following it until the task ends, and
// returns the task as it ended. A stream that breaks before the end is
// reopened after the last chunk delivered; an error of fn ends TaskLog
// with that error.
func (c *Client) TaskLog(ctx context.Context, appID, taskID string, after int64, fn func(entry TaskLogEntry) error) (api.Task, error) {
	if appID == "" || taskID == "" {
		return api.Task{}, errNoID
	}
	delay, failures := 250*time.Millisecond, 0
	for {
		start := after
		t, retry, err := c.readTaskLog(ctx, appID, taskID, &after, fn)
		if t != nil {
			return *t, nil
		}
		if !retry || ctx.Err() != nil {
			return api.Task{}, err
		}
		if after != start {
			delay, failures = 250*time.Millisecond, 0
		}
		if failures++; failures > taskLogRetries {
			return api.Task{}, fmt.Errorf("client: task %s log: %w", taskID, err)
		}
		select {
		case <-ctx.Done():
			return api.Task{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// readTaskLog reads one stream of a task's log, advancing *after with
// each chunk delivered, and returns the task once the end event came.
// Without it, retry says whether reopening the stream may help.
func (c *Client) readTaskLog(ctx context.Context, appID, taskID string, after *int64, fn func(TaskLogEntry) error) (_ *api.Task, retry bool, _ error) {
	var q url.Values
	if *after > 0 {
		q = url.Values{"after": {strconv.FormatInt(*after, 10)}}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.send(ctx, request{method: http.MethodGet, path: appPath(appID, "tasks", url.PathEscape(taskID), "log"),
		query: q, accept: "text/event-stream"})
	if err != nil {
		return nil, transient(err), err
	}
	r := newSSEReader(resp.Body)
	defer r.close()
	for {
		id, typ, data, err := r.nextBytes()
		if errors.Is(err, io.EOF) {
			return nil, true, errors.New("the stream ended before the task did")
		}
		if err != nil {
			return nil, true, err
		}
		switch typ {
		case "log":
			e := TaskLogEntry{}
			if e.Seq, err = strconv.ParseInt(id, 10, 64); err != nil {
				return nil, false, fmt.Errorf("client: task log chunk id %q: %w", id, err)
			}
			if err := json.Unmarshal(data, &e); err != nil {
				return nil, false, fmt.Errorf("client: decode task log chunk %d: %w", e.Seq, err)
			}
			if err := fn(e); err != nil {
				return nil, false, err
			}
			*after = e.Seq
		case "end":
			var t api.Task
			if err := json.Unmarshal(data, &t); err != nil {
				return nil, false, fmt.Errorf("client: decode the task at the end of its log: %w", err)
			}
			return &t, false, nil
		}
	}
}

// transient reports whether a failed request may succeed if repeated: the
// connection failed, or the server answered 429 or 5xx.
func transient(err error) bool {
	s := StatusCode(err)
	return s == 0 || s == http.StatusTooManyRequests || s >= 500
}

// AppProcesses lists what the supervisor of role's sandbox (api.RoleDev
// or api.RoleLive; "" is dev) runs.
func (c *Client) AppProcesses(ctx context.Context, appID, role string) (*api.AppProcesses, error) {
	if appID == "" {
		return nil, errNoID
	}
	var q url.Values
	if role != "" {
		q = url.Values{"role": {role}}
	}
	var out api.AppProcesses
	if err := c.do(ctx, http.MethodGet, appPath(appID, "processes"), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AppLogLine is one line of AppLogs.
type AppLogLine = api.AppLogLine

// AppLogs streams the log of process name in role's sandbox ("" is dev):
// its last tail lines (0: the server's default), then, with follow, new
// ones until ctx ends or the caller closes the body. The body is NDJSON,
// one AppLogLine a line. The caller must close it.
func (c *Client) AppLogs(ctx context.Context, appID, role, name string, tail int, follow bool) (io.ReadCloser, error) {
	if appID == "" {
		return nil, errNoID
	}
	if name == "" {
		return nil, errors.New("client: empty process name")
	}
	q := url.Values{}
	if role != "" {
		q.Set("role", role)
	}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	if follow {
		q.Set("follow", "true")
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: appPath(appID, "processes", url.PathEscape(name), "logs"),
		query: q, accept: "application/x-ndjson"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Config lists an app's config; sensitive values are left out.
func (c *Client) Config(ctx context.Context, appID string) (*api.ConfigList, error) {
	if appID == "" {
		return nil, errNoID
	}
	var out api.ConfigList
	if err := c.do(ctx, http.MethodGet, appPath(appID, "config"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateConfig creates the config entry req.Key; a key in use is an
// *Error with code config_exists (409).
func (c *Client) CreateConfig(ctx context.Context, appID string, req api.SetConfigRequest) (*api.ConfigEntry, error) {
	if appID == "" {
		return nil, errNoID
	}
	if req.Key == "" {
		return nil, errNoConfigKey
	}
	var out api.ConfigEntry
	if err := c.do(ctx, http.MethodPost, appPath(appID, "config"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchConfig changes what req sets of the config entry key and keeps the
// rest. req.Key must be empty or key. A sensitive entry stays sensitive
// (config_sensitive).
func (c *Client) PatchConfig(ctx context.Context, appID, key string, req api.SetConfigRequest) (*api.ConfigEntry, error) {
	if appID == "" {
		return nil, errNoID
	}
	if key == "" {
		return nil, errNoConfigKey
	}
	if req.Key != "" && req.Key != key {
		return nil, fmt.Errorf("client: PatchConfig of %q with a request for key %q", key, req.Key)
	}
	req.Key = ""
	var out api.ConfigEntry
	if err := c.do(ctx, http.MethodPatch, appPath(appID, "config", url.PathEscape(key)), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetConfig creates the config entry req.Key, or when it exists changes
// what req sets of it (PatchConfig).
func (c *Client) SetConfig(ctx context.Context, appID string, req api.SetConfigRequest) (*api.ConfigEntry, error) {
	out, err := c.CreateConfig(ctx, appID, req)
	if Code(err) == "config_exists" {
		return c.PatchConfig(ctx, appID, req.Key, req)
	}
	return out, err
}

// DeleteConfig deletes the config entry key.
func (c *Client) DeleteConfig(ctx context.Context, appID, key string) error {
	if appID == "" {
		return errNoID
	}
	if key == "" {
		return errNoConfigKey
	}
	return c.do(ctx, http.MethodDelete, appPath(appID, "config", url.PathEscape(key)), nil, nil, nil)
}

// AppEvents returns one page of an app's events, oldest first, paged like
// Events. q.SandboxID must be empty.
func (c *Client) AppEvents(ctx context.Context, appID string, q EventQuery) (*api.EventList, error) {
	if appID == "" {
		return nil, errNoID
	}
	if q.SandboxID != "" {
		return nil, errors.New("client: AppEvents takes no sandbox filter")
	}
	var out api.EventList
	if err := c.do(ctx, http.MethodGet, appPath(appID, "events"), q.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StreamAppEvents opens a stream of an app's events, as StreamEvents.
// q.SandboxID must be empty.
func (c *Client) StreamAppEvents(ctx context.Context, appID string, q EventQuery) (*EventStream, error) {
	if appID == "" {
		return nil, errNoID
	}
	if q.SandboxID != "" {
		return nil, errors.New("client: StreamAppEvents takes no sandbox filter")
	}
	return c.streamEvents(ctx, appPath(appID, "events"), q)
}

// poll calls done until it reports true or fails, waiting longer between
// calls, up to two seconds.
func poll(ctx context.Context, done func() (bool, error)) error {
	delay := 200 * time.Millisecond
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// appPath is the path of an app, or of one of its sub-resources when
// parts (escaped) are given.
func appPath(id string, parts ...string) string {
	p := "/v1/apps/" + url.PathEscape(id)
	for _, s := range parts {
		p += "/" + s
	}
	return p
}

// errNoConfigKey is returned, without a request, by calls given an empty
// config key.
var errNoConfigKey = errors.New("client: empty config key")
