// Package process is the process driver: a sandbox is a process tree in its
// own session and directory, confined by Landlock, a seccomp filter,
// no_new_privs and rlimits that hutch-agent applies to itself before it
// serves. With no namespaces, it is explicitly degraded isolation: host
// processes are visible, the memory limit is per process, and CPU is not
// limited. When hutch runs as root, every sandbox also gets its own host uid,
// which makes the pids limit per sandbox and keeps sandboxes out of each
// other's files.
package process

import (
	"context"
	"fmt"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/base/keylock"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// Name is the driver's name in configuration and in the API.
const Name = "process"

var _ driver.Driver = (*Driver)(nil)
var _ driver.Sweeper = (*Driver)(nil)
var _ io.Closer = (*Driver)(nil)

// Config configures the driver.
type Config struct {
	// Dir holds one directory per sandbox.
	Dir string
	// AgentPath is the hutch-agent binary.
	AgentPath string
	// WarmPool is how many agents to keep started ahead of need; 0 turns
	// the pool off.
	WarmPool int
	Log      *slog.Logger
}

// Driver runs sandboxes as confined process trees.
type Driver struct {
	cfg       Config
	dir       string
	agentPath string
	agentInfo agentproto.Info // what the agent binary speaks
	log       *slog.Logger
	uids      *hostids.Pool // nil when hutch is not root: sandboxes share its uid
	caps      driver.Capabilities
	probe     confine.Report
	pool      *warm.Pool[*spawned]
	trash     *launch.Trash
	starts    keylock.Map // serialises Start per sandbox directory
	prlimit   string      // util-linux's prlimit(1), "" when the host has none
	held      heldListeners
}

func init() {
	driver.Register(driver.Registration{
		Name:    Name,
		Summary: "a confined process tree (Landlock, seccomp, rlimits); degraded",
		Auto:    2,
		Factory: func(o driver.Options) (driver.Driver, error) {
			return New(Config{Dir: o.Dir, AgentPath: o.AgentPath, WarmPool: o.WarmPool, Log: o.Log})
		},
	})
}

// New checks cfg and returns the driver; it touches nothing on the host
// (Open does).
func New(cfg Config) (*Driver, error) {
	if cfg.Dir == "" || cfg.AgentPath == "" {
		return nil, fmt.Errorf("process driver: Dir and AgentPath are required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	agent, err := filepath.Abs(cfg.AgentPath)
	if err != nil {
		return nil, fmt.Errorf("process driver: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Driver{cfg: cfg, dir: dir, agentPath: agent, log: cfg.Log, trash: launch.NewTrash(filepath.Join(dir, ".trash"))}, nil
}

// Open checks the agent and prepares the host: the directory and, as
// root, the uid registry. It starts the warm pool last.
func (d *Driver) Open(ctx context.Context) error {
	st, err := os.Stat(d.agentPath)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("process driver: agent %s is not an executable file", d.agentPath)
	}
	if err := launch.CheckStatic(d.agentPath); err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	if d.agentInfo, err = launch.Protocol(ctx, d.agentPath); err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	d.log.Info("agent binary", "path", d.agentPath, "protocol", d.agentInfo.Version(), "features", d.agentInfo.Features)
	d.probe = confine.Probe()
	if err := os.MkdirAll(filepath.Dir(d.dir), 0o700); err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	if os.Geteuid() != 0 {
		if err := launch.EnsureDir(d.dir, 0o700, d.log); err != nil {
			return fmt.Errorf("process driver: %w", err)
		}
	} else {
		// Sandboxes run as uids of their own, with no mount namespace to
		// hide the host's paths: each must look its directory up by path
		// and run the agent (through a descriptor hutch opens, so its
		// directory needs no opening).
		if err := launch.EnsureDir(d.dir, 0o711, d.log); err != nil {
			return fmt.Errorf("process driver: %w", err)
		}
		if err := launch.Reachable(d.dir); err != nil {
			return fmt.Errorf("process driver: as root it runs each sandbox as a uid of its own, so its directory %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("process driver: the agent %s must be executable by other users (mode %04o); run 'chmod o+x %s'", d.agentPath, st.Mode().Perm(), d.agentPath)
		}
		if d.uids, err = newUIDPool(); err != nil {
			return fmt.Errorf("process driver: %w", err)
		}
		if err := d.loadUIDs(); err != nil {
			return err
		}
	}
	if p, err := exec.LookPath("prlimit"); err == nil {
		d.prlimit, _ = filepath.Abs(p)
	}
	d.caps = d.capabilities()
	d.pool = newPool(d, d.cfg.WarmPool)
	return nil
}

// Close stops the warm pool and removes its agents. Sandboxes keep
// running.
func (d *Driver) Close() error {
	if d.pool != nil {
		d.pool.Close()
	}
	d.trash.Wait()
	return nil
}

// Name returns "process".
func (d *Driver) Name() string { return Name }

// Capabilities reports what this host lets the driver do.
func (d *Driver) Capabilities() driver.Capabilities { return d.caps }

func (d *Driver) capabilities() driver.Capabilities {
	c := driver.Capabilities{
		Isolation: api.IsolationDegraded,
		Templates: []string{"host"},
		StartStop: true,
		Limits:    driver.LimitCaps{Memory: true},
		Degraded: []string{
			"process driver: no namespaces; host processes are visible and the host network stack is shared (TCP is denied by Landlock, but to the sandbox's egress proxy, where the kernel supports it)",
			"process driver: memory limit is per process (RLIMIT_DATA), not per sandbox",
			"process driver: cpu limit is not enforced",
		},
	}
	if d.uids != nil {
		c.Limits.Pids = true
	} else {
		c.Degraded = append(c.Degraded,
			"process driver: not running as root, so sandboxes share hutch's uid and the pids limit is not enforced")
	}
	if d.prlimit == "" {
		c.Degraded = append(c.Degraded,
			"process driver: prlimit(1) (util-linux) is missing, so the memory limit is set just after a command starts, and a command that forks at once can outrun it")
	}
	c.Degraded = append(c.Degraded, launch.KernelGaps(d.probe)...)
	return c
}

// sandboxDir is where one sandbox lives: run/agent.sock, agent.log,
// state.json, envelope.json and root/, the sandbox's own files.
func (d *Driver) sandboxDir(id string) string { return filepath.Join(d.dir, id) }
