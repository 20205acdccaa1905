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
	"github.com/hutchdev/hutch/internal/envelope"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// readyTimeout bounds how long Create waits for the agent's ready line.
const readyTimeout = 15 * time.Second

// Create makes the sandbox's directory and starts its agent.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (h driver.Handle, retErr error) {
	if spec.Template != "" && spec.Template != "host" {
		return h, errdefs.Invalid("invalid_template", "the process driver only has the %q template", "host")
	}
	dir := d.sandboxDir(spec.SandboxID)
	root := filepath.Join(dir, "root")
	workdir, err := resolveCwd(root, spec.Cwd)
	if err != nil {
		return h, err
	}
	if err := os.Mkdir(dir, 0o711); err != nil {
		if errors.Is(err, os.ErrExist) {
			return h, errdefs.Conflict("sandbox_exists", "sandbox %s already has a directory", spec.SandboxID)
		}
		return h, fmt.Errorf("create sandbox directory: %w", err)
	}
	st := state{Dir: dir}
	defer func() {
		if retErr != nil {
			d.teardown(context.WithoutCancel(ctx), st)
		}
	}()
	if d.uids != nil {
		if st.UID, err = d.uids.take(spec.SandboxID); err != nil {
			return h, errdefs.Unavailable("no_capacity", "%s", err.Error())
		}
	}
	// Record the uid before anything runs as it, so a sweep can clean up.
	if err := writeState(st); err != nil {
		return h, fmt.Errorf("write sandbox state: %w", err)
	}
	// run/ holds the agent's socket: the sandbox's uid must create it there,
	// and may write nothing else outside root/.
	for _, p := range []string{filepath.Join(dir, "run"), root, filepath.Join(root, "tmp"), workdir} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return h, fmt.Errorf("create sandbox root: %w", err)
		}
		if err := os.Chown(p, int(st.UID), int(st.UID)); err != nil && st.UID != 0 {
			return h, fmt.Errorf("chown sandbox root: %w", err)
		}
	}
	env := baseEnv(spec.SandboxID, root, st.UID)
	maps.Copy(env, spec.Env)
	env["HUTCH_SANDBOX_ID"] = spec.SandboxID
	ev := &envelope.Envelope{
		Version:      envelope.Version,
		SandboxID:    spec.SandboxID,
		Token:        spec.Token,
		Socket:       filepath.Join(dir, "run", "agent.sock"),
		Root:         root,
		Workdir:      workdir,
		Env:          env,
		MaxFileBytes: spec.MaxFileBytes,
		Confine:      d.confinement(root, spec.Limits, st.UID != 0),
	}
	if err := writeEnvelope(dir, ev); err != nil {
		return h, err
	}
	if st, err = d.launch(ctx, st, ev); err != nil {
		return h, err
	}
	raw, err := json.Marshal(st)
	if err != nil {
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

// Start starts the agent of a stopped sandbox again, with the envelope it
// was created with.
func (d *Driver) Start(ctx context.Context, h driver.Handle) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	if alive(st) {
		return h, nil
	}
	ev, err := readEnvelope(st.Dir)
	if err != nil {
		return h, err
	}
	if st, err = d.launch(ctx, st, ev); err != nil {
		d.killAll(context.WithoutCancel(ctx), st)
		return h, err
	}
	if h.State, err = json.Marshal(st); err != nil {
		return h, err
	}
	return h, nil
}

// launch starts hutch-agent with ev on its stdin and waits for its ready
// line.
func (d *Driver) launch(ctx context.Context, st state, ev *envelope.Envelope) (state, error) {
	logf, err := os.OpenFile(filepath.Join(st.Dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return st, fmt.Errorf("open agent log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(d.agentPath)
	cmd.Dir = ev.Workdir
	cmd.Env = []string{}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if st.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: st.UID, Gid: st.UID, Groups: []uint32{}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return st, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return st, err
	}
	if err := cmd.Start(); err != nil {
		return st, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "could not start the sandbox agent")
	}
	st.Pid = cmd.Process.Pid
	st.StartTime, _ = procStartTime(st.Pid)
	// The agent outlives this process across control-plane restarts; until
	// then, reap it when it exits.
	go func() { _ = cmd.Wait() }()
	if err := writeState(st); err != nil {
		return st, fmt.Errorf("write sandbox state: %w", err)
	}
	werr := envelope.Encode(stdin, ev)
	stdin.Close()
	if werr != nil {
		return st, d.agentFailed(st, werr)
	}
	if err := waitReady(ctx, stdout); err != nil {
		return st, d.agentFailed(st, err)
	}
	return st, nil
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
		stdout.Close()
		switch {
		case res.err != nil:
			return fmt.Errorf("agent exited before it was ready: %w", res.err)
		case !res.r.Ready:
			return fmt.Errorf("agent refused to start: %s", res.r.Error)
		}
		return nil
	case <-ctx.Done():
		stdout.Close()
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
