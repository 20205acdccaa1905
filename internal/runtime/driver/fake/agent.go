package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	agentsrv "github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/proc"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// bootstrap is what a sandbox's agent starts from, kept in its directory
// for Start (a real driver's envelope).
type bootstrap struct {
	Spec    driver.Spec `json:"spec"`
	Root    string      `json:"root"`
	Workdir string      `json:"workdir"`
}

const bootstrapFile = "bootstrap.json"

func writeBootstrap(dir string, b bootstrap) error {
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, bootstrapFile), raw, 0o600)
}

func readBootstrap(dir string) (bootstrap, error) {
	var b bootstrap
	raw, err := os.ReadFile(filepath.Join(dir, bootstrapFile))
	if err != nil {
		return b, fmt.Errorf("fake driver: the sandbox's bootstrap: %w", err)
	}
	return b, json.Unmarshal(raw, &b)
}

// agent is one sandbox's agent server in the test process. Every command
// it starts leads a process group of its own (the agent's rule); the
// agent records each group, so stop kills what this sandbox started and
// nothing of another's. A process that left its group (setsid) is found
// by the sandbox's id in its environment, which every command inherits.
type agent struct {
	id     string
	srv    *agentsrv.Server
	served chan error

	mu     sync.Mutex
	groups []int
}

// startAgent listens on the handle's socket and serves the agent API.
func startAgent(h driver.Handle, b bootstrap, log *slog.Logger) (*agent, error) {
	ln, err := listen(h.Agent.Address)
	if err != nil {
		return nil, err
	}
	env := map[string]string{"HOME": b.Root, "PATH": proc.DefaultPath, "HUTCH_SANDBOX_ID": b.Spec.SandboxID}
	for k, v := range b.Spec.Env {
		env[k] = v
	}
	a := &agent{id: b.Spec.SandboxID, served: make(chan error, 1)}
	a.srv, err = agentsrv.New(agentsrv.Config{
		SandboxID:    b.Spec.SandboxID,
		Token:        b.Spec.Token,
		Root:         b.Root,
		Workdir:      b.Workdir,
		Env:          env,
		MaxFileBytes: b.Spec.MaxFileBytes,
		MaxTarBytes:  b.Spec.MaxTarBytes,
		Adopt:        a.adopt,
		Logger:       log,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	go func() { a.served <- a.srv.Serve(ln) }()
	return a, nil
}

// listen makes the socket, owner-only, replacing a stale one.
func listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	short, done, err := agentproto.SocketPath(path)
	if err != nil {
		return nil, err
	}
	defer done()
	ln, err := net.Listen("unix", short)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// adopt records a command's process group, and forgets the groups that
// have ended.
func (a *agent) adopt(pid int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	live := a.groups[:0]
	for _, g := range a.groups {
		if groupAlive(g) {
			live = append(live, g)
		}
	}
	a.groups = append(live, pid)
	return nil
}

// stopWait bounds how long stop waits for the sandbox's processes to go.
const stopWait = 5 * time.Second

// stop closes the server (every call in flight ends), kills every group
// the agent started and waits, a few seconds at most, until they are
// gone; then kills what of the sandbox left its group.
func (a *agent) stop() {
	a.srv.Close()
	<-a.served
	a.mu.Lock()
	groups := a.groups
	a.groups = nil
	a.mu.Unlock()
	for _, g := range groups {
		_ = unix.Kill(-g, unix.SIGKILL)
	}
	deadline := time.Now().Add(stopWait)
	for _, g := range groups {
		for groupAlive(g) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_ = hostproc.KillAll(ctx, marked(a.id))
}

// marked selects the processes whose environment names sandbox id (its
// entries each end in a NUL).
func marked(id string) func(hostproc.Proc) bool {
	entry := "\x00HUTCH_SANDBOX_ID=" + id + "\x00"
	return func(p hostproc.Proc) bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
		return err == nil && strings.Contains("\x00"+string(b), entry)
	}
}

// groupAlive says whether a process of group g exists (a zombie counts
// until the agent's reaper takes it).
func groupAlive(g int) bool {
	return unix.Kill(-g, 0) != unix.ESRCH
}
