// Package supervisor is the agent's app supervisor (agentproto.FeatureApp,
// the routes under /app): it runs the processes an app's manifest
// (internal/agent/manifest) names and keeps them running, the way
// supervisord or Nomad's restart policy do. Every exit is followed by a
// restart after a backoff (BackoffMin doubling to BackoffMax, from
// BackoffMin again after a run of ResetAfter or more); FastLimit exits in
// a row each within FastWindow of starting mark the process crashed, and
// it stays down until a restart, a changed manifest or a change of the
// manifest's file. The manifest is read again when its file changes
// (polled every Poll) and on request; an invalid or missing file leaves
// the last good manifest's processes running and is reported. Each
// process keeps a log of its output across its runs.
package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/agent/manifest"
	"github.com/hutchdev/hutch/internal/agent/proc"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Supervisor runs the processes an app's manifest names and keeps them
// running (see the package's doc). It is inert until the control plane
// configures it (PUT /app), so a plain sandbox supervises nothing. Control
// calls (configure, reload, restart, stop), the poller and Shutdown take
// ctl, one at a time; status takes only mu, which the process loops take
// to record what happens, so it never waits for a process to stop.
type Supervisor struct {
	commands        *proc.Service
	cred            *syscall.Credential
	root            *files.Root
	log             *slog.Logger
	stopping        <-chan struct{}
	maxRequestBytes int64
	timing          timing
	wg              sync.WaitGroup // the poller and every process loop

	ctl sync.Mutex

	// Set under ctl and mu both; read under either.
	cfg      *agentproto.AppConfig // nil while not supervising
	dir      string                // the last configured app directory
	good     *manifest.Manifest    // the manifest running
	merr     *agentproto.ManifestError
	seen     fileKey // the manifest file's key when last read
	procs    []*appProc
	pollStop chan struct{} // closed to end the poller; nil without one
	closed   bool

	mu sync.Mutex
}

// Config is what the supervisor needs.
type Config struct {
	// Commands starts the app's processes, as the sandbox's commands.
	Commands *proc.Service
	// Credential, when set, is who the app's processes run as; nil, as
	// the commands. Only a user and group no command has keeps the
	// config in their environment out of the commands' reach.
	Credential *syscall.Credential
	// Root resolves the app directory and its manifest.
	Root *files.Root
	// Stopping is closed when the agent shuts down: it ends the logs
	// followed.
	Stopping <-chan struct{}
	// MaxRequestBytes bounds a JSON request body.
	MaxRequestBytes int64
	Log             *slog.Logger
}

// New is a supervisor of nothing yet, with the timing of supervisors
// made now.
func New(cfg Config) *Supervisor {
	return &Supervisor{
		commands:        cfg.Commands,
		cred:            cfg.Credential,
		root:            cfg.Root,
		log:             cfg.Log,
		stopping:        cfg.Stopping,
		maxRequestBytes: cfg.MaxRequestBytes,
		timing:          appTiming,
	}
}

// timing is the restart policy and the intervals of a supervisor; tests
// shrink it.
type timing struct {
	BackoffMin, BackoffMax time.Duration
	// ResetAfter: a run at least this long starts the backoff over.
	ResetAfter time.Duration
	// FastWindow: a run shorter than this failed fast; a longer one is
	// running (not just starting).
	FastWindow time.Duration
	// FastLimit fast failures in a row crash the process.
	FastLimit int
	// StopGrace is how long a stopped process has after SIGTERM before
	// SIGKILL.
	StopGrace time.Duration
	// Poll is how often the manifest file is looked at.
	Poll time.Duration
}

// appTiming is the timing of supervisors made from now on.
var appTiming = timing{
	BackoffMin: 500 * time.Millisecond,
	BackoffMax: 30 * time.Second,
	ResetAfter: 10 * time.Second,
	FastWindow: 2 * time.Second,
	FastLimit:  5,
	StopGrace:  5 * time.Second,
	Poll:       time.Second,
}

// procSpec is what defines a supervised process: a change of any of it
// restarts the process, as a new one.
type procSpec struct {
	name, command string
	web           bool
	port          int
	dir           string            // the app directory, a sandbox path
	env           map[string]string // AppConfig.Env, and PORT for the web process
}

func (a procSpec) equal(b procSpec) bool {
	return a.name == b.name && a.command == b.command && a.web == b.web && a.port == b.port &&
		a.dir == b.dir && maps.Equal(a.env, b.env)
}

// appProc is one supervised process, by name: its spec, its log (which
// outlives its runs and its definitions) and what its loop last recorded.
type appProc struct {
	spec procSpec
	log  *appLog
	loop *procLoop // its last loop; nil before the first

	// Guarded by supervisor.mu.
	state          string
	pid            int
	runs           int // starts since it was defined
	restarts       int
	lastExitCode   *int
	lastExitSignal string
	startedAt      *time.Time
	lastExitAt     *time.Time
	message        string
}

// setState changes p under the supervisor's lock.
func (sv *Supervisor) setState(p *appProc, f func(*appProc)) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	f(p)
}

// reload triggers.
const (
	reloadConfigure   = iota // PUT /app
	reloadRequested          // POST /app/reload or /app/restart
	reloadFileChanged        // the poller saw the file change
)

// errNotConfigured answers a call that needs PUT /app first.
var errNotConfigured = errdefs.Conflict("app_not_configured", "the app is not configured: PUT /app first")

func errClosed() error {
	return errdefs.Unavailable("agent_shutting_down", "the agent is shutting down")
}

// checkAppConfig refuses a directory outside the sandbox or an invalid
// environment.
func (sv *Supervisor) checkAppConfig(cfg agentproto.AppConfig) error {
	if !path.IsAbs(cfg.Dir) || path.Clean(cfg.Dir) != cfg.Dir {
		return errdefs.Invalid("invalid_app_dir", "dir %q is not a clean absolute path", cfg.Dir)
	}
	if _, err := sv.root.Resolve(cfg.Dir); err != nil {
		return errdefs.Invalid("invalid_app_dir", "dir %q is not a directory of the sandbox", cfg.Dir)
	}
	for k, v := range cfg.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return errdefs.Invalid("invalid_env", "env name %q is invalid", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return errdefs.Invalid("invalid_env", "env %s holds a NUL byte", k)
		}
	}
	return nil
}

// configure starts supervising the app of cfg, or applies a changed cfg:
// a new directory starts over from its manifest, a new environment
// restarts every process. The same cfg again changes nothing.
func (sv *Supervisor) configure(cfg agentproto.AppConfig) (agentproto.AppStatus, error) {
	if err := sv.checkAppConfig(cfg); err != nil {
		return agentproto.AppStatus{}, err
	}
	cfg.Env = maps.Clone(cfg.Env)
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	if sv.closed {
		return agentproto.AppStatus{}, errClosed()
	}
	if old := sv.cfg; old != nil && old.Dir == cfg.Dir && maps.Equal(old.Env, cfg.Env) {
		return sv.status(), nil
	}
	if sv.dir != "" && sv.dir != cfg.Dir {
		// Another app: nothing of the last one stays.
		sv.stopLoops(sv.procs)
		sv.endLogs()
		sv.mu.Lock()
		sv.procs, sv.good, sv.merr, sv.seen = nil, nil, nil, fileKey{}
		sv.mu.Unlock()
	}
	sv.mu.Lock()
	sv.cfg, sv.dir = &cfg, cfg.Dir
	sv.mu.Unlock()
	for _, p := range sv.procs {
		p.log.setClosed(false)
	}
	sv.reload(reloadConfigure)
	if sv.pollStop == nil {
		sv.pollStop = make(chan struct{})
		sv.wg.Add(1)
		go sv.poll(sv.pollStop)
	}
	return sv.status(), nil
}

// reload reads the manifest and makes the processes what it says: new
// ones start, removed ones stop, changed ones restart, the others go on.
// A manifest that cannot be read or is invalid changes nothing but the
// error reported. A crashed process starts again when the manifest
// changed, or its file did (trigger reloadFileChanged). It returns the
// names it started or restarted. Call with ctl held.
func (sv *Supervisor) reload(trigger int) map[string]bool {
	m, key, merr := sv.readManifest(sv.cfg.Dir)
	sv.mu.Lock()
	sv.seen = key
	if merr != nil {
		sv.merr = merr
		sv.mu.Unlock()
		sv.log.Warn("app manifest not taken", "dir", sv.cfg.Dir, "code", merr.Code, "err", merr.Message)
		return nil
	}
	fresh := trigger == reloadFileChanged || !reflect.DeepEqual(m, sv.good)
	sv.good, sv.merr = m, nil
	sv.mu.Unlock()

	want := sv.specs(m)
	byName := map[string]*appProc{}
	var gone, changed []*appProc
	for _, p := range sv.procs {
		byName[p.spec.name] = p
		switch w, ok := want[p.spec.name]; {
		case !ok:
			gone = append(gone, p)
		case !w.equal(p.spec):
			changed = append(changed, p)
		}
	}
	sv.stopLoops(append(slices.Clone(gone), changed...))
	for _, p := range gone {
		p.log.system("--- removed from the manifest ---")
		p.log.setClosed(true)
	}

	started := map[string]bool{}
	var procs []*appProc
	for _, mp := range m.Processes() {
		spec := want[mp.Name]
		p := byName[mp.Name]
		switch {
		case p == nil:
			p = &appProc{spec: spec, log: newAppLog(appLogBytes)}
			sv.startLoop(p, "")
		case !spec.equal(p.spec):
			sv.redefine(p, spec)
			sv.startLoop(p, "its definition changed")
		case !p.looping() && sv.stateIs(p, agentproto.AppStopped):
			sv.startLoop(p, "supervision resumed")
		case !p.looping() && sv.stateIs(p, agentproto.AppCrashed) && fresh:
			sv.startLoop(p, "the manifest changed")
		default:
			procs = append(procs, p)
			continue
		}
		started[p.spec.name] = true
		procs = append(procs, p)
	}
	sv.mu.Lock()
	sv.procs = procs
	sv.mu.Unlock()
	return started
}

// specs are the processes m defines, by name.
func (sv *Supervisor) specs(m *manifest.Manifest) map[string]procSpec {
	out := map[string]procSpec{}
	for _, mp := range m.Processes() {
		s := procSpec{name: mp.Name, command: mp.Command, web: mp.Web, dir: sv.cfg.Dir, env: maps.Clone(sv.cfg.Env)}
		if mp.Web && m.Web != nil {
			s.port = m.Web.Port
			if s.env == nil {
				s.env = map[string]string{}
			}
			s.env["PORT"] = strconv.Itoa(s.port)
		}
		out[mp.Name] = s
	}
	return out
}

// redefine gives p a new spec: it is a new process, its counts start over.
func (sv *Supervisor) redefine(p *appProc, spec procSpec) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	p.spec = spec
	p.runs, p.restarts, p.lastExitCode, p.lastExitSignal, p.lastExitAt, p.message = 0, 0, nil, "", nil, ""
}

// startLoop starts a loop of p's runs; why is for the log. Call with ctl
// held, once p's last loop has ended.
func (sv *Supervisor) startLoop(p *appProc, why string) {
	l := newProcLoop()
	sv.mu.Lock()
	p.loop, p.state, p.message = l, agentproto.AppStarting, ""
	sv.mu.Unlock()
	sv.wg.Add(1)
	go sv.runLoop(p, p.spec, l, why)
}

// stopLoops stops the loops of procs, all at once, and waits for them to
// end: each process has timing.StopGrace after SIGTERM before SIGKILL.
func (sv *Supervisor) stopLoops(procs []*appProc) {
	for _, p := range procs {
		if p.loop != nil {
			p.loop.halt()
		}
	}
	for _, p := range procs {
		if p.loop != nil {
			<-p.loop.done
		}
	}
}

// looping reports whether p's loop runs. Call with ctl held.
func (p *appProc) looping() bool {
	if p.loop == nil {
		return false
	}
	select {
	case <-p.loop.done:
		return false
	default:
		return true
	}
}

// stateIs reports whether p is in state.
func (sv *Supervisor) stateIs(p *appProc, state string) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return p.state == state
}

// restart reads the manifest again (see reload), then restarts the
// processes named (all when names is empty) that the reload did not
// just start: crashed and backing-off ones get a fresh chance.
func (sv *Supervisor) restart(names []string) (agentproto.AppStatus, error) {
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	if err := sv.ready(); err != nil {
		return agentproto.AppStatus{}, err
	}
	started := sv.reload(reloadRequested)
	for _, n := range names {
		if !slices.ContainsFunc(sv.procs, func(p *appProc) bool { return p.spec.name == n }) {
			return sv.status(), errdefs.NotFound("app_process_not_found", "the app has no process %q", n)
		}
	}
	var targets []*appProc
	for _, p := range sv.procs {
		if (len(names) == 0 || slices.Contains(names, p.spec.name)) && !started[p.spec.name] {
			targets = append(targets, p)
		}
	}
	sv.stopLoops(targets)
	for _, p := range targets {
		sv.startLoop(p, "restart requested")
	}
	return sv.status(), nil
}

// reloadNow is POST /app/reload.
func (sv *Supervisor) reloadNow() (agentproto.AppStatus, error) {
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	if err := sv.ready(); err != nil {
		return agentproto.AppStatus{}, err
	}
	sv.reload(reloadRequested)
	return sv.status(), nil
}

// ready is nil when the supervisor supervises. Call with ctl held.
func (sv *Supervisor) ready() error {
	switch {
	case sv.closed:
		return errClosed()
	case sv.cfg == nil:
		return errNotConfigured
	}
	return nil
}

// stop stops every process and the poller, and waits for the processes
// to end; supervision is off until configure. Stopping what is stopped
// changes nothing.
func (sv *Supervisor) stop() (agentproto.AppStatus, error) {
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	if sv.closed {
		return agentproto.AppStatus{}, errClosed()
	}
	sv.halt()
	sv.stopLoops(sv.procs)
	sv.endLogs()
	return sv.status(), nil
}

// halt turns supervision off: no poller, no configuration; it asks the
// loops to stop but does not wait. Call with ctl held.
func (sv *Supervisor) halt() {
	if sv.pollStop != nil {
		close(sv.pollStop)
		sv.pollStop = nil
	}
	sv.mu.Lock()
	sv.cfg = nil
	sv.mu.Unlock()
	for _, p := range sv.procs {
		if p.loop != nil {
			p.loop.halt()
		}
	}
}

// endLogs ends the logs for their followers, once what they will read of
// them is written. Call with ctl held.
func (sv *Supervisor) endLogs() {
	for _, p := range sv.procs {
		p.log.setClosed(true)
	}
}

// Shutdown stops supervising for good: every process is asked to stop
// (Wait waits for them), and later calls are refused.
func (sv *Supervisor) Shutdown() {
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	sv.closed = true
	sv.halt()
	sv.endLogs()
}

// Wait waits, until ctx ends, for every goroutine of the supervisor (the
// poller, the process loops) to end.
func (sv *Supervisor) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		sv.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("app processes still stopping: %w", ctx.Err())
	}
}

// status is what GET /app answers.
func (sv *Supervisor) status() agentproto.AppStatus {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	st := agentproto.AppStatus{
		Configured:    sv.cfg != nil,
		Dir:           sv.dir,
		Manifest:      sv.good,
		ManifestError: sv.merr,
		Processes:     make([]agentproto.AppProcess, 0, len(sv.procs)),
	}
	for _, p := range sv.procs {
		st.Processes = append(st.Processes, agentproto.AppProcess{
			Name:           p.spec.name,
			Command:        p.spec.command,
			Web:            p.spec.web,
			Port:           p.spec.port,
			State:          p.state,
			PID:            p.pid,
			Restarts:       p.restarts,
			LastExitCode:   p.lastExitCode,
			LastExitSignal: p.lastExitSignal,
			StartedAt:      p.startedAt,
			LastExitAt:     p.lastExitAt,
			Message:        p.message,
		})
	}
	return st
}

// processLog is the log of the process called name.
func (sv *Supervisor) processLog(name string) (*appLog, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	for _, p := range sv.procs {
		if p.spec.name == name {
			return p.log, nil
		}
	}
	return nil, errdefs.NotFound("app_process_not_found", "the app has no process %q", name)
}
