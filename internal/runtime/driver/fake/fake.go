// Package fake is a driver for tests of the layers above the drivers (the
// sandbox service, the HTTP API, the router): no isolation and no root, but
// a real hutch-agent server per sandbox, running in the test process on a
// real Unix socket with a directory of its own as the sandbox's root. So
// exec, files, processes, terminals and watch behave as they do under a
// real driver, and the tests that use it run without privileges and under
// -race.
//
// Tests steer it: Hook makes an operation block or fail inside the driver
// (to open a window for a race), Calls counts operations, Live lists the
// agents that run, and Shutdown stops them all at the end of a test.
//
// It passes the driver conformance suite (fake_test.go) but for what it
// cannot do by nature: it isolates nothing, and it enforces no limit,
// though its default capabilities claim them for the layers above.
//
// It is not registered: a server never runs it.
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Name is the driver's name unless Config gives another.
const Name = "fake"

var _ driver.Driver = (*Driver)(nil)
var _ driver.Sweeper = (*Driver)(nil)

// Op names a driver operation, for Hook and Calls.
type Op string

// The operations.
const (
	OpCreate  Op = "create"
	OpStart   Op = "start"
	OpStop    Op = "stop"
	OpDestroy Op = "destroy"
	OpRecover Op = "recover"
	OpStatus  Op = "status"
	OpPause   Op = "pause"
	OpResume  Op = "resume"
	OpSweep   Op = "sweep" // its hook runs before the directories are read
)

// Config configures the fake.
type Config struct {
	// Dir holds one directory per sandbox.
	Dir string
	// Name is the driver's name; "" means "fake".
	Name string
	// Capabilities replaces the default ones (full limits, start and
	// stop, the "host" template), when set.
	Capabilities *driver.Capabilities
	// Log receives the agents' logs; nil discards them.
	Log *slog.Logger
}

// Hook runs inside an operation, after it is counted and before it acts;
// an error fails the operation with nothing done.
type Hook func(ctx context.Context, sandboxID string) error

// Driver is the fake driver.
type Driver struct {
	cfg  Config
	caps driver.Capabilities

	mu     sync.Mutex
	hooks  map[Op]Hook
	calls  map[Op]int
	agents map[string]*agent // sandbox id → its running agent
	paused map[string]bool   // sandbox id → paused (pause.go)
}

// New returns the fake; Open makes its directory.
func New(cfg Config) *Driver {
	if cfg.Name == "" {
		cfg.Name = Name
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	caps := driver.Capabilities{
		Isolation: api.IsolationDegraded,
		Degraded:  []string{"fake driver: no isolation at all; for tests only"},
		Templates: []string{"host"},
		StartStop: true,
		Pause:     true,
		Limits:    driver.LimitCaps{Memory: true, CPU: true, Pids: true},
	}
	if cfg.Capabilities != nil {
		caps = *cfg.Capabilities
	}
	return &Driver{cfg: cfg, caps: caps, hooks: map[Op]Hook{}, calls: map[Op]int{}, agents: map[string]*agent{}, paused: map[string]bool{}}
}

// Hook sets the hook of op, replacing any; nil removes it.
func (d *Driver) Hook(op Op, h Hook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h == nil {
		delete(d.hooks, op)
		return
	}
	d.hooks[op] = h
}

// Calls is how many times op was called.
func (d *Driver) Calls(op Op) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// Live lists the sandboxes whose agents run, sorted.
func (d *Driver) Live() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.agents))
}

// Shutdown stops every agent, as the end of a test should; unlike Close,
// which leaves sandboxes running as a driver's Close does.
func Shutdown(d *Driver) {
	d.mu.Lock()
	agents := slices.Collect(maps.Values(d.agents))
	clear(d.agents)
	d.mu.Unlock()
	for _, a := range agents {
		a.stop()
	}
}

// enter counts op and runs its hook.
func (d *Driver) enter(ctx context.Context, op Op, id string) error {
	d.mu.Lock()
	d.calls[op]++
	h := d.hooks[op]
	d.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(ctx, id)
}

// Name returns the configured name.
func (d *Driver) Name() string { return d.cfg.Name }

// Open makes the driver's directory, and the test process a child
// subreaper, as hutch-agent makes itself: a command's orphans come back
// to it, where the agent's reaper reaps them, so a command's process
// group is never left orphaned (the kernel sends SIGHUP to an orphaned
// group that holds a stopped process, which no sandbox of a real driver
// sees).
func (d *Driver) Open(context.Context) error {
	if d.cfg.Dir == "" {
		return errors.New("fake driver: Dir is required")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("fake driver: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return os.MkdirAll(d.cfg.Dir, 0o700)
}

// Close leaves the sandboxes running.
func (d *Driver) Close() error { return nil }

// Capabilities returns what the fake says it can do.
func (d *Driver) Capabilities() driver.Capabilities { return d.caps }

// state is the fake's part of a handle.
type state struct {
	Dir string `json:"dir"`
}

// Create makes the sandbox's directory and starts its agent.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (_ driver.Handle, retErr error) {
	if err := d.enter(ctx, OpCreate, spec.SandboxID); err != nil {
		return driver.Handle{}, err
	}
	if !slices.Contains(d.caps.Templates, spec.Template) && spec.Template != "" {
		return driver.Handle{}, errdefs.Invalid("invalid_template", "the fake driver has no template %q", spec.Template)
	}
	dir := filepath.Join(d.cfg.Dir, spec.SandboxID)
	root := filepath.Join(dir, "root")
	workdir, err := placeCwd(root, spec.Cwd)
	if err != nil {
		return driver.Handle{}, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return driver.Handle{}, errdefs.Conflict("sandbox_exists", "sandbox %s already has a directory", spec.SandboxID)
		}
		return driver.Handle{}, err
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.MkdirAll(workdir, 0o700); err != nil {
		return driver.Handle{}, err
	}
	raw, err := json.Marshal(state{Dir: dir})
	if err != nil {
		return driver.Handle{}, err
	}
	h := driver.Handle{
		Version: driver.HandleVersion,
		Driver:  d.cfg.Name,
		Agent:   driver.Endpoint{Network: "unix", Address: filepath.Join(dir, "agent.sock"), Info: agentproto.Current()},
		Token:   spec.Token,
		Workdir: workdir,
		State:   raw,
	}
	boot := bootstrap{Spec: spec, Root: root, Workdir: workdir}
	if err := writeBootstrap(dir, boot); err != nil {
		return driver.Handle{}, err
	}
	if err := d.run(spec.SandboxID, h, boot); err != nil {
		return driver.Handle{}, err
	}
	return h, nil
}

// Start starts the agent of a stopped sandbox again; a running one is
// refused.
func (d *Driver) Start(ctx context.Context, h driver.Handle) (driver.Handle, error) {
	st, id, err := d.decode(h)
	if err != nil {
		return h, err
	}
	if err := d.enter(ctx, OpStart, id); err != nil {
		return h, err
	}
	boot, err := readBootstrap(st.Dir)
	if err != nil {
		return h, err
	}
	return h, d.run(id, h, boot)
}

// run starts the sandbox's agent unless one runs already.
func (d *Driver) run(id string, h driver.Handle, boot bootstrap) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.agents[id]; ok {
		return errdefs.Conflict("sandbox_running", "the sandbox's agent is already running")
	}
	a, err := startAgent(h, boot, d.cfg.Log.With(logattr.Sandbox(id)))
	if err != nil {
		return err
	}
	d.agents[id] = a
	return nil
}

// Stop stops the agent and every process it started; files stay.
func (d *Driver) Stop(ctx context.Context, h driver.Handle) error {
	_, id, err := d.decode(h)
	if err != nil {
		return err
	}
	if err := d.enter(ctx, OpStop, id); err != nil {
		return err
	}
	d.halt(id)
	return nil
}

func (d *Driver) halt(id string) {
	d.mu.Lock()
	a := d.agents[id]
	delete(d.agents, id)
	delete(d.paused, id)
	d.mu.Unlock()
	if a != nil {
		a.stop()
	}
}

// Destroy stops the agent and removes the sandbox's directory.
func (d *Driver) Destroy(ctx context.Context, h driver.Handle) error {
	st, id, err := d.decode(h)
	if err != nil {
		return err
	}
	if err := d.enter(ctx, OpDestroy, id); err != nil {
		return err
	}
	d.halt(id)
	return os.RemoveAll(st.Dir)
}

// Recover reports the sandbox's state; the fake's agents live in the test
// process, so there is nothing to re-attach to.
func (d *Driver) Recover(ctx context.Context, h driver.Handle) (driver.Status, error) {
	_, id, err := d.decode(h)
	if err != nil {
		return driver.Status{}, err
	}
	if err := d.enter(ctx, OpRecover, id); err != nil {
		return driver.Status{}, err
	}
	return d.status(h)
}

// Status says whether the sandbox's agent runs.
func (d *Driver) Status(ctx context.Context, h driver.Handle) (driver.Status, error) {
	_, id, err := d.decode(h)
	if err != nil {
		return driver.Status{}, err
	}
	if err := d.enter(ctx, OpStatus, id); err != nil {
		return driver.Status{}, err
	}
	return d.status(h)
}

func (d *Driver) status(h driver.Handle) (driver.Status, error) {
	st, id, err := d.decode(h)
	if err != nil {
		return driver.Status{}, err
	}
	d.mu.Lock()
	_, running := d.agents[id]
	d.mu.Unlock()
	switch {
	case running:
		return driver.Status{State: driver.Running}, nil
	case exists(st.Dir):
		return driver.Status{State: driver.Stopped, Detail: "agent is not running"}, nil
	}
	return driver.Status{State: driver.Gone, Detail: "sandbox directory is gone"}, nil
}

// Sweep removes the directories of sandboxes known does not claim, and
// stops their agents.
func (d *Driver) Sweep(ctx context.Context, known func(string) bool) ([]string, error) {
	if err := d.enter(ctx, OpSweep, ""); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || known(e.Name()) {
			continue
		}
		d.halt(e.Name())
		if err := os.RemoveAll(filepath.Join(d.cfg.Dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

func (d *Driver) decode(h driver.Handle) (state, string, error) {
	var st state
	if h.Driver != d.cfg.Name || h.Version != driver.HandleVersion {
		return st, "", fmt.Errorf("handle is for driver %q version %d, not %s version %d", h.Driver, h.Version, d.cfg.Name, driver.HandleVersion)
	}
	if err := json.Unmarshal(h.State, &st); err != nil {
		return st, "", fmt.Errorf("decode fake handle: %w", err)
	}
	if st.Dir == "" {
		return st, "", errors.New("fake handle has no directory")
	}
	return st, filepath.Base(st.Dir), nil
}

// placeCwd places the requested working directory inside root.
func placeCwd(root, cwd string) (string, error) {
	if cwd == "" {
		return root, nil
	}
	p := filepath.Join(root, cwd)
	if p != root && !strings.HasPrefix(p, root+"/") {
		return "", errdefs.Invalid("path_outside_sandbox", "cwd %q is outside the sandbox", cwd)
	}
	return p, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
