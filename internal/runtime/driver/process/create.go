package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
)

// Create makes the sandbox's directory and starts its agent, taking a warm
// agent from the pool when one is ready.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (driver.Handle, error) {
	var h driver.Handle
	if spec.Template != "" && spec.Template != "host" {
		return h, errdefs.Invalid("invalid_template", "the process driver only has the %q template", "host")
	}
	if spec.Root {
		return h, errdefs.Invalid("root_unsupported", "the process driver cannot run commands as root inside a sandbox; use the namespace driver")
	}
	dir := d.sandboxDir(spec.SandboxID)
	workdir, err := resolveCwd(filepath.Join(dir, "root"), spec.Cwd)
	if err != nil {
		return h, err
	}
	if _, err := os.Lstat(dir); err == nil {
		return h, errdefs.Conflict("sandbox_exists", "sandbox %s already has a directory", spec.SandboxID)
	}
	var ev *envelope.Envelope
	var st state
	if sp, ok := d.pool.Take(); ok {
		if ev, st, err = d.bringUp(ctx, spec, dir, workdir, sp); err != nil {
			d.log.Warn("warm agent failed; starting a cold one", logattr.Sandbox(spec.SandboxID), "err", err)
			ev = nil
		}
	}
	if ev == nil {
		if err := os.Mkdir(dir, 0o711); err != nil {
			return h, fmt.Errorf("create sandbox directory: %w", err)
		}
		sp, err := d.newAgent(dir)
		if err != nil {
			return h, err
		}
		if ev, st, err = d.bringUp(ctx, spec, dir, workdir, sp); err != nil {
			return h, err
		}
	}
	raw, err := json.Marshal(st)
	if err != nil {
		d.teardown(context.WithoutCancel(ctx), st)
		return h, err
	}
	return driver.Handle{
		Version: driver.HandleVersion,
		Driver:  Name,
		Agent:   driver.Endpoint{Network: "unix", Address: ev.Socket, Info: d.agentInfo},
		Token:   spec.Token,
		Workdir: workdir,
		State:   raw,
	}, nil
}

// bringUp moves a spawned agent's directory to dir (when it is a warm one),
// hands it the sandbox's envelope and waits until it serves. On error
// nothing of it is left.
func (d *Driver) bringUp(ctx context.Context, spec driver.Spec, dir, workdir string, sp *spawned) (_ *envelope.Envelope, _ state, retErr error) {
	defer func() {
		if retErr != nil {
			sp.close()
			d.teardown(context.WithoutCancel(ctx), sp.st)
		}
	}()
	if sp.st.Dir != dir {
		if err := os.Rename(sp.st.Dir, dir); err != nil {
			return nil, sp.st, fmt.Errorf("move warm agent into place: %w", err)
		}
		sp.st.Dir = dir
		if d.uids != nil && sp.st.UID != 0 {
			d.uids.Claim(sp.st.UID, dir)
		}
		if err := launch.WriteState(dir, sp.st); err != nil {
			return nil, sp.st, err
		}
	}
	if err := prepareDirs(sp.st, workdir); err != nil {
		return nil, sp.st, err
	}
	port, err := d.openEgress(dir)
	if err != nil {
		return nil, sp.st, err
	}
	sp.st.EgressPort = port
	if err := launch.WriteState(dir, sp.st); err != nil {
		return nil, sp.st, err
	}
	root := filepath.Join(dir, "root")
	env := baseEnv(spec.SandboxID, root, sp.st.UID)
	maps.Copy(env, driver.ProxyEnv(proxyURL(port)))
	maps.Copy(env, spec.Env)
	env["HUTCH_SANDBOX_ID"] = spec.SandboxID
	ev := &envelope.Envelope{
		Version:        launch.EnvelopeVersion(d.agentInfo),
		SandboxID:      spec.SandboxID,
		Token:          spec.Token,
		Socket:         filepath.Join(dir, "run", "agent.sock"),
		Root:           root,
		Workdir:        workdir,
		Env:            env,
		MaxFileBytes:   spec.MaxFileBytes,
		MaxTarBytes:    spec.MaxTarBytes,
		Confine:        d.confinement(root, spec.Limits, sp.st.UID != 0, port),
		CommandRlimits: commandRlimits(spec.Limits),
		Prlimit:        d.prlimit,
		ExecFD:         launch.ExecFD,
	}
	if err := launch.WriteEnvelope(dir, ev); err != nil {
		return nil, sp.st, err
	}
	if err := sp.agent.Handshake(ctx, ev); err != nil {
		return nil, sp.st, err
	}
	return ev, sp.st, nil
}

// newAgent prepares dir and starts an agent in it that waits for its
// envelope. On error nothing of it is left.
func (d *Driver) newAgent(dir string) (_ *spawned, retErr error) {
	st := state{Dir: dir}
	defer func() {
		if retErr != nil {
			d.teardown(context.Background(), st)
		}
	}()
	if d.uids != nil {
		uid, err := d.uids.Take(dir)
		if err != nil {
			return nil, errdefs.Unavailable("no_capacity", "%s", err.Error())
		}
		st.UID = uid
	}
	// Record the uid before anything runs as it, so a sweep can clean up.
	if err := launch.WriteState(dir, st); err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "root")
	if err := prepareDirs(st, root); err != nil {
		return nil, err
	}
	sp, err := d.spawn(st, root)
	if sp != nil {
		st = sp.st
	}
	return sp, err
}

// prepareDirs makes the sandbox's directories, owned by its uid: run/
// holds the agent's socket (the sandbox may write nothing else outside
// root/), root/ its files.
func prepareDirs(st state, workdir string) error {
	root := filepath.Join(st.Dir, "root")
	for _, p := range []string{filepath.Join(st.Dir, "run"), root, filepath.Join(root, "tmp"), workdir} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("create sandbox directories: %w", err)
		}
		if st.UID != 0 {
			if err := os.Chown(p, int(st.UID), int(st.UID)); err != nil {
				return fmt.Errorf("chown sandbox directories: %w", err)
			}
		}
	}
	return nil
}

// Start starts the agent of a stopped sandbox again, with the envelope it
// was created with.
func (d *Driver) Start(ctx context.Context, h driver.Handle) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	// One start at a time per sandbox: a second one finds the agent of
	// the first alive and is refused.
	unlock := d.starts.Lock(st.Dir)
	defer unlock()
	// The directory's copy of the state names the agent a concurrent Start
	// may just have started; the handle names the one before it.
	if cur, err := readState(st.Dir); err == nil && cur.Pid != 0 {
		st.Pid, st.StartTime = cur.Pid, cur.StartTime
	}
	if hostproc.Alive(st.Pid, st.StartTime) {
		return h, errdefs.Conflict("sandbox_running", "the sandbox's agent is already running")
	}
	ev, err := launch.ReadEnvelope(st.Dir)
	if err != nil {
		return h, err
	}
	ev.ExecFD = launch.ExecFD
	sp, err := d.spawn(st, ev.Workdir)
	if err == nil {
		st = sp.st
		err = sp.agent.Handshake(ctx, ev)
	}
	if err != nil {
		d.killAll(context.WithoutCancel(ctx), st)
		return h, err
	}
	if h.State, err = json.Marshal(st); err != nil {
		return h, err
	}
	return h, nil
}

// spawned is an agent started for a sandbox, waiting for its envelope.
type spawned struct {
	st    state
	agent *launch.Agent
}

func (sp *spawned) close() { sp.agent.Close() }

// spawn starts hutch-agent as the sandbox's uid in its own session, with
// dir as its working directory, and records its pid.
func (d *Driver) spawn(st state, dir string) (*spawned, error) {
	// Through a descriptor: the sandbox's uid need not reach the agent's
	// directory.
	cmd, done, err := launch.AgentCommand(d.agentPath, d.agentPath)
	if err != nil {
		return nil, err
	}
	defer done()
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if st.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: st.UID, Gid: st.UID, Groups: []uint32{}}
	}
	a, err := launch.Start(cmd, filepath.Join(st.Dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	st.Pid, st.StartTime = a.Pid, a.StartTime
	sp := &spawned{st: st, agent: a}
	if err := launch.WriteState(st.Dir, st); err != nil {
		sp.close()
		return sp, err
	}
	return sp, nil
}

// resolveCwd places the requested working directory inside root.
func resolveCwd(root, cwd string) (string, error) {
	if cwd == "" {
		return root, nil
	}
	if strings.ContainsRune(cwd, 0) {
		return "", errdefs.Invalid("invalid_path", "cwd contains a NUL byte")
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if p != root && !strings.HasPrefix(p, root+"/") {
		return "", errdefs.Invalid("path_outside_sandbox",
			"cwd %q is outside the sandbox; with the process driver give a relative path (it is placed under %s)", cwd, root)
	}
	return p, nil
}

func decodeState(h driver.Handle) (state, error) {
	var st state
	if h.Driver != Name || h.Version != driver.HandleVersion {
		return st, fmt.Errorf("handle is for driver %q version %d, not %s version %d", h.Driver, h.Version, Name, driver.HandleVersion)
	}
	if err := json.Unmarshal(h.State, &st); err != nil {
		return st, fmt.Errorf("decode process handle: %w", err)
	}
	if st.Dir == "" {
		return st, errors.New("process handle has no directory")
	}
	return st, nil
}
