package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/confine"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/hostproc"
	"github.com/hutchdev/hutch/internal/envelope"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// readyTimeout bounds how long Create waits for the agent's ready line.
const readyTimeout = 15 * time.Second

// Create makes the sandbox's directory and starts its agent, taking a warm
// agent from the pool when one is ready.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (driver.Handle, error) {
	var h driver.Handle
	if spec.Template != "" && spec.Template != "host" {
		return h, errdefs.Invalid("invalid_template", "the process driver only has the %q template", "host")
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
	if sp := d.pool.take(); sp != nil {
		if ev, st, err = d.bringUp(ctx, spec, dir, workdir, sp); err != nil {
			d.log.Warn("warm agent failed; starting a cold one", "sandbox.id", spec.SandboxID, "err", err)
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
		Agent:   driver.Endpoint{Network: "unix", Address: ev.Socket},
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
		if err := writeState(sp.st); err != nil {
			return nil, sp.st, fmt.Errorf("write sandbox state: %w", err)
		}
	}
	if err := prepareDirs(sp.st, workdir); err != nil {
		return nil, sp.st, err
	}
	root := filepath.Join(dir, "root")
	env := baseEnv(spec.SandboxID, root, sp.st.UID)
	maps.Copy(env, spec.Env)
	env["HUTCH_SANDBOX_ID"] = spec.SandboxID
	ev := &envelope.Envelope{
		Version:        envelope.Version,
		SandboxID:      spec.SandboxID,
		Token:          spec.Token,
		Socket:         filepath.Join(dir, "run", "agent.sock"),
		Root:           root,
		Workdir:        workdir,
		Env:            env,
		MaxFileBytes:   spec.MaxFileBytes,
		Confine:        d.confinement(root, spec.Limits, sp.st.UID != 0),
		CommandRlimits: commandRlimits(spec.Limits),
	}
	if err := writeEnvelope(dir, ev); err != nil {
		return nil, sp.st, err
	}
	if err := d.handshake(ctx, sp, ev); err != nil {
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
	if err := writeState(st); err != nil {
		return nil, fmt.Errorf("write sandbox state: %w", err)
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
	if hostproc.Alive(st.Pid, st.StartTime) {
		return h, nil
	}
	ev, err := readEnvelope(st.Dir)
	if err != nil {
		return h, err
	}
	sp, err := d.spawn(st, ev.Workdir)
	if err == nil {
		st = sp.st
		err = d.handshake(ctx, sp, ev)
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

// spawned is an agent process that was started and waits for its
// envelope on stdin.
type spawned struct {
	st     state
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

// spawn starts hutch-agent as the sandbox's uid in its own session, with
// dir as its working directory, and records its pid.
func (d *Driver) spawn(st state, dir string) (*spawned, error) {
	logf, err := os.OpenFile(filepath.Join(st.Dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open agent log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(d.agentPath)
	cmd.Dir = dir
	cmd.Env = []string{}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if st.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: st.UID, Gid: st.UID, Groups: []uint32{}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		stdout.Close()
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "could not start the sandbox agent")
	}
	st.Pid = cmd.Process.Pid
	st.StartTime, _ = hostproc.StartTime(st.Pid)
	// The agent outlives this process across control-plane restarts; until
	// then, reap it when it exits.
	go func() { _ = cmd.Wait() }()
	sp := &spawned{st: st, stdin: stdin, stdout: stdout}
	if err := writeState(st); err != nil {
		sp.close()
		return sp, fmt.Errorf("write sandbox state: %w", err)
	}
	return sp, nil
}

// handshake sends ev to a spawned agent and waits for its ready line.
func (d *Driver) handshake(ctx context.Context, sp *spawned, ev *envelope.Envelope) error {
	defer sp.close()
	if err := envelope.Encode(sp.stdin, ev); err != nil {
		return d.agentFailed(sp.st, err)
	}
	sp.stdin.Close()
	if err := waitReady(ctx, sp.stdout); err != nil {
		return d.agentFailed(sp.st, err)
	}
	return nil
}

func (sp *spawned) close() {
	sp.stdin.Close()
	sp.stdout.Close()
}

// ready is the agent's first and only line on stdout.
type ready struct {
	Ready   bool           `json:"ready"`
	Pid     int            `json:"pid"`
	Error   string         `json:"error"`
	Confine confine.Report `json:"confine"`
}

func waitReady(ctx context.Context, stdout io.ReadCloser) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	type result struct {
		r   ready
		err error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		var r ready
		if err == nil {
			err = json.Unmarshal(line, &r)
		}
		ch <- result{r, err}
	}()
	select {
	case res := <-ch:
		switch {
		case res.err != nil:
			return fmt.Errorf("agent exited before it was ready: %w", res.err)
		case !res.r.Ready:
			return fmt.Errorf("agent refused to start: %s", res.r.Error)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent not ready: %w", ctx.Err())
	}
}

func (d *Driver) agentFailed(st state, err error) error {
	tail := logTail(filepath.Join(st.Dir, "agent.log"), 512)
	if tail != "" {
		err = fmt.Errorf("%w; agent log: %s", err, tail)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the sandbox agent failed to start")
}

func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
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

// The envelope is kept (0600, root-owned) so Start can relaunch the agent.
func writeEnvelope(dir string, ev *envelope.Envelope) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "envelope.json"), b, 0o600)
}

func readEnvelope(dir string) (*envelope.Envelope, error) {
	b, err := os.ReadFile(filepath.Join(dir, "envelope.json"))
	if err != nil {
		return nil, fmt.Errorf("read sandbox envelope: %w", err)
	}
	var ev envelope.Envelope
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("decode sandbox envelope: %w", err)
	}
	return &ev, nil
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
