package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/apps/presets"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// Environment of a task's command besides the config marked for the agent.
const EnvTask = "HUTCH_TASK_ID"

// healthWait bounds how long a task waits for the app to come up after
// it, before it reports the app unhealthy.
const healthWait = 30 * time.Second

// running is the cancel function of each app's running task.
type running struct {
	task   string
	cancel context.CancelFunc
}

// CreateTask starts a command in the app's dev sandbox: checkpoint, run
// (its log kept for GET …/log), files changed, processes restarted as the
// manifest says, build check, health check. One task at a time per app.
func (s *Service) CreateTask(ctx context.Context, id string, req api.CreateTaskRequest) (api.Task, error) {
	p, _ := tenancy.From(ctx)
	if len(req.Command) == 0 || len(req.Command) > api.MaxTaskCommandArgs || req.Command[0] == "" {
		return api.Task{}, errdefs.Invalid("invalid_command", "command must be 1-%d arguments, the first not empty", api.MaxTaskCommandArgs)
	}
	if req.TimeoutS < 0 || req.TimeoutS > api.MaxTaskTimeout {
		return api.Task{}, errdefs.Invalid("invalid_timeout", "timeout_s must be from 1 to %d (0: %d)", api.MaxTaskTimeout, api.DefaultTaskTimeout)
	}
	if req.TimeoutS == 0 {
		req.TimeoutS = api.DefaultTaskTimeout
	}
	// Under the app's lock, so no undo or promotion is halfway through
	// when the task starts.
	unlock := s.locks.Lock(id)
	defer unlock()
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.Task{}, err
	}
	t := &api.Task{AppID: a.ID, Status: api.TaskQueued, Command: req.Command, Message: req.Message, TimeoutS: req.TimeoutS,
		FilesChanged: []api.FileChange{}}
	if err := s.apps.CreateTask(ctx, t); err != nil {
		return api.Task{}, err
	}
	out := *t
	tctx, cancel := context.WithCancel(context.Background())
	run := &running{task: t.ID, cancel: cancel}
	s.tasks.Store(a.ID, run)
	s.goOwned(p, func(svc context.Context) {
		// The next task may be stored before this one's goroutine ends:
		// only this one's entry goes.
		defer s.tasks.CompareAndDelete(a.ID, run)
		defer cancel()
		stop := context.AfterFunc(svc, cancel) // Close ends it too
		defer stop()
		s.runTask(&taskRun{s: s, a: a, t: t, ctx: tenancy.With(tctx, p), after: svc})
	})
	return out, nil
}

// runningTask is the id of the app's running task, "" for none.
func (s *Service) runningTask(_ context.Context, appID string) string {
	if r, ok := s.tasks.Load(appID); ok {
		return r.(*running).task
	}
	return ""
}

// CancelTask cancels a queued or running task: its command is killed and
// it ends as cancelled.
func (s *Service) CancelTask(ctx context.Context, appID, taskID string) (api.Task, error) {
	t, err := s.apps.GetTask(ctx, appID, taskID)
	if err != nil {
		return api.Task{}, err
	}
	if t.Status != api.TaskQueued && t.Status != api.TaskRunning {
		return api.Task{}, errdefs.Conflict("task_done", "task %s is already %s", taskID, t.Status)
	}
	if r, ok := s.tasks.Load(appID); ok && r.(*running).task == taskID {
		r.(*running).cancel()
	}
	return *t, nil
}

// cancelTasks cancels whatever task of the app runs.
func (s *Service) cancelTasks(appID string) {
	if r, ok := s.tasks.Load(appID); ok {
		r.(*running).cancel()
	}
}

// GetTask returns one task.
func (s *Service) GetTask(ctx context.Context, appID, taskID string) (api.Task, error) {
	t, err := s.apps.GetTask(ctx, appID, taskID)
	if err != nil {
		return api.Task{}, err
	}
	return *t, nil
}

// ListTasks returns an app's tasks, newest first.
func (s *Service) ListTasks(ctx context.Context, appID string, limit int) (api.TaskList, error) {
	ts, err := s.apps.ListTasks(ctx, appID, limit)
	if err != nil {
		return api.TaskList{}, err
	}
	if ts == nil {
		ts = []api.Task{}
	}
	return api.TaskList{Tasks: ts}, nil
}

// LogChunk is one numbered piece of a task's log: a JSON api.TaskLogEntry,
// as the log's stream sends it.
type LogChunk struct {
	Seq  int64
	Data []byte
}

// TaskLog returns the chunks of a task's log after seq; done says the
// task has ended, so nothing more will come.
func (s *Service) TaskLog(ctx context.Context, appID, taskID string, after int64) ([]LogChunk, bool, error) {
	t, err := s.apps.GetTask(ctx, appID, taskID)
	if err != nil {
		return nil, false, err
	}
	done := t.EndedAt != nil
	chunks, err := s.apps.TaskLog(ctx, taskID, after, store.MaxLimit)
	if err != nil {
		return nil, done, err
	}
	out := make([]LogChunk, len(chunks))
	for i, c := range chunks {
		out[i] = LogChunk{Seq: c.Seq, Data: c.Data}
	}
	return out, done, nil
}

// taskRun is one task as it runs.
type taskRun struct {
	s *Service
	a *store.App
	t *api.Task
	// ctx ends when the task is cancelled or the service closes; after,
	// what follows the command (the files changed, restarts, checks),
	// only when the service closes.
	ctx, after context.Context
}

// log appends to the task's log; a failure to is logged, not fatal.
func (r *taskRun) log(stream, text string) {
	b, _ := json.Marshal(api.TaskLogEntry{Stream: stream, Text: strings.ToValidUTF8(text, "\uFFFD")})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
	defer cancel()
	if _, err := r.s.apps.AppendTaskLog(ctx, r.t.ID, b); err != nil {
		r.s.log.Warn("apps: task log", "task", r.t.ID, "err", err)
	}
}

// save writes the task as it is now.
func (r *taskRun) save(fn func(t *api.Task)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 10*time.Second)
	defer cancel()
	t, err := r.s.apps.UpdateTask(ctx, r.a.ID, r.t.ID, func(t *api.Task) error { fn(t); return nil })
	if err != nil {
		r.s.log.Error("apps: save task", "task", r.t.ID, "err", err)
		fn(r.t)
		return
	}
	r.t = t
}

func (s *Service) runTask(r *taskRun) {
	ctx, a, t := r.ctx, r.a, r.t
	start := time.Now()
	r.save(func(t *api.Task) {
		now := store.Time(start)
		t.Status, t.StartedAt = api.TaskRunning, &now
	})
	s.emit(a, api.EventTaskStarted, "task "+t.ID+" started: "+strings.Join(t.Command, " "), map[string]any{"task": t.ID})
	err := r.run()
	status, typ := api.TaskSucceeded, api.EventTaskCompleted
	switch {
	case ctx.Err() != nil:
		status, typ = api.TaskCancelled, api.EventTaskCancelled
		r.log("system", "cancelled\n")
	case err != nil:
		status, typ = api.TaskFailed, api.EventTaskFailed
		r.log("system", err.Error()+"\n")
	case r.t.ExitCode == nil || *r.t.ExitCode != 0:
		status, typ = api.TaskFailed, api.EventTaskFailed
	}
	r.save(func(t *api.Task) {
		now := store.Time(time.Now())
		t.Status, t.EndedAt, t.DurationMS = status, &now, time.Since(start).Milliseconds()
		if err != nil && ctx.Err() == nil {
			t.Error = err.Error()
		}
	})
	s.emit(a, typ, fmt.Sprintf("task %s %s", t.ID, status), map[string]any{"task": t.ID, "status": status,
		"build_status": r.t.BuildStatus, "app_healthy": r.t.AppHealthy, "files_changed": len(r.t.FilesChanged)})
}

// run does the task's steps; the outcome is in r.t.
func (r *taskRun) run() error {
	s, a, ctx := r.s, r.a, r.ctx
	cp, err := s.sbx.Checkpoint(ctx, a.Dev, Dir, taskMessage(r.t), api.CheckpointTask)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	r.save(func(t *api.Task) { t.Checkpoint = cp.ID })
	env, err := s.configEnv(ctx, a, api.AccessAgent)
	if err != nil {
		return err
	}
	env[EnvApp], env[EnvRole], env[EnvBase], env[EnvTask] = a.Name, api.RoleDev, base(api.RoleDev), r.t.ID
	code, err := r.exec(api.ExecRequest{Cmd: r.t.Command, Cwd: Dir, Env: env, TimeoutMS: r.t.TimeoutS * 1000})
	if err != nil {
		return err
	}
	r.save(func(t *api.Task) { t.ExitCode = &code })
	// What follows runs even when the task is cancelled now: the files
	// changed and the app must be told.
	after := r.after
	changes, err := s.sbx.HistoryDiff(after, a.Dev, Dir, cp.ID, "")
	if err != nil {
		return fmt.Errorf("files changed: %w", err)
	}
	r.save(func(t *api.Task) { t.FilesChanged = changes })
	st, err := r.restartAfter(after)
	if err != nil {
		return err
	}
	build := r.buildStatus(after, st)
	r.save(func(t *api.Task) { t.BuildStatus = build })
	healthy, previewOK := r.healthAfter(after, st)
	r.save(func(t *api.Task) { t.AppHealthy, t.PreviewOK = healthy, previewOK })
	return nil
}

func taskMessage(t *api.Task) string {
	if t.Message != "" {
		return "before task " + t.ID + ": " + t.Message
	}
	return "before task " + t.ID
}

// exec runs the command and copies its output into the log.
func (r *taskRun) exec(req api.ExecRequest) (int, error) {
	st, err := r.s.sbx.ExecStream(r.ctx, r.a.Dev, req)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return 0, errors.New("the command's output ended without an exit status")
		}
		if err != nil {
			return 0, err
		}
		switch ev.Type {
		case api.ExecStdout, api.ExecStderr:
			r.log(ev.Type, string(ev.Data))
		case api.ExecExit:
			if ev.Exit.TimedOut {
				r.log("system", fmt.Sprintf("timed out after %d s\n", r.t.TimeoutS))
			}
			return ev.Exit.ExitCode, nil
		}
	}
}

// restartAfter restarts the processes the manifest marks
// restart_after_task, after reading the manifest again (the task may have
// changed it), and returns the supervisor's status.
func (r *taskRun) restartAfter(ctx context.Context) (sandbox.AppStatus, error) {
	st, err := r.s.sbx.AppReload(ctx, r.a.Dev)
	if err != nil {
		return st, fmt.Errorf("reload the manifest: %w", err)
	}
	if st.ManifestError != nil {
		r.log("system", "sandbox.yaml is not taken, the last good manifest runs on: "+st.ManifestError.Error()+"\n")
	}
	if st.Manifest == nil {
		return st, nil
	}
	names := st.Manifest.RestartAfterTask
	if len(names) == 0 {
		return st, nil
	}
	r.log("system", "restarting "+strings.Join(names, ", ")+"\n")
	return r.s.sbx.AppRestart(ctx, r.a.Dev, names)
}

// buildStatus runs the build check: the manifest's build command, the
// preset's when the manifest leaves it out, skipped when it is "".
func (r *taskRun) buildStatus(ctx context.Context, st sandbox.AppStatus) string {
	cmd, timeout := "", 300
	if pre, ok := presets.Get(r.a.Preset); ok {
		cmd = pre.Build
	}
	if m := st.Manifest; m != nil {
		timeout = m.BuildTimeoutS
		if m.BuildCommand != nil {
			cmd = *m.BuildCommand
		}
	}
	if strings.TrimSpace(cmd) == "" {
		return api.BuildSkipped
	}
	r.log("system", "build check: "+cmd+"\n")
	res, err := r.s.sbx.Exec(ctx, r.a.Dev, api.ExecRequest{Cmd: []string{"/bin/sh", "-c", cmd}, Cwd: Dir, TimeoutMS: timeout * 1000})
	if err != nil {
		r.log("system", "build check could not run: "+err.Error()+"\n")
		return api.BuildFailed
	}
	r.log("stdout", res.Stdout)
	r.log("stderr", res.Stderr)
	if res.ExitCode != 0 {
		return api.BuildFailed
	}
	return api.BuildPassed
}

// healthAfter waits, up to healthWait, for every process to run and the
// dev route's "/" to answer 200.
func (r *taskRun) healthAfter(ctx context.Context, st sandbox.AppStatus) (healthy, previewOK bool) {
	checks, healthy := r.s.waitHealthy(ctx, r.a, r.a.Dev, api.RoleDev, healthWait)
	if !healthy {
		r.log("system", "app unhealthy: "+checkFailed("dev", checks).Error()+"\n")
	}
	if st.Manifest != nil && st.Manifest.Web == nil {
		return healthy, true // nothing to preview
	}
	for _, c := range checks {
		if c.Name == "http" {
			previewOK = c.OK
		}
	}
	return healthy, previewOK
}
