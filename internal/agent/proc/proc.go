// Package proc runs the sandbox's commands: exec, one command with its
// output streamed until it exits (POST /exec), and background processes,
// each with its output in a ring a client reads from any offset, its
// input, signals, terminal size and waits (/processes). Every command
// starts through one process-wide reaper, which owns every wait, and on
// one fork-and-kill thread, which every signal is sent from too; at
// shutdown KillDescendants kills the agent's whole process tree.
package proc

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// ErrShuttingDown refuses to start a process once Drain was called.
var ErrShuttingDown = errors.New("the agent is shutting down")

// Config is what the sandbox's commands get.
type Config struct {
	// Root resolves a command's working directory; its workdir is the
	// default one.
	Root *files.Root
	// Env is every command's base environment; a request's env wins.
	Env map[string]string
	// CommandRlimits are set on each command: through Prlimit (see
	// confine.PrlimitArgs) before it runs, or, without it, right after it
	// starts.
	CommandRlimits []confine.Rlimit
	Prlimit        string
	// Credential, when set, is the user and group every command runs as.
	Credential *syscall.Credential
	// Adopt, when set, is called with each command's pid right after it
	// starts; an error kills the command.
	Adopt func(pid int) error
	// MaxRequestBytes bounds a JSON request body.
	MaxRequestBytes int64
	// OutputBytes bounds each background process's output buffer.
	OutputBytes int64
	// Exited is told of each background process once it has exited and
	// its output has ended.
	Exited func(agentproto.Process)
	Log    *slog.Logger
}

// Service runs the sandbox's commands.
type Service struct {
	cfg    Config
	root   *files.Root
	log    *slog.Logger
	reaper *reaper
	procs  *procTable

	// startMu orders process starts against shutdown: a start either
	// happens before draining is set (and its process is killed with the
	// tree) or is refused.
	startMu  sync.Mutex
	draining bool
}

// New starts the process-wide reaper, unless it runs already, and
// returns the service of cfg.
func New(cfg Config) *Service {
	return &Service{
		cfg:    cfg,
		root:   cfg.Root,
		log:    cfg.Log,
		reaper: processReaper(),
		procs:  newProcTable(cfg.OutputBytes, keptExits),
	}
}

// Routes adds exec's and the processes' routes to mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /exec", s.handleExec)
	mux.HandleFunc("POST /processes", s.handleStartProcess)
	mux.HandleFunc("GET /processes", s.handleListProcesses)
	mux.HandleFunc("GET /processes/{pid}", s.handleGetProcess)
	mux.HandleFunc("GET /processes/{pid}/output", s.handleProcessOutput)
	mux.HandleFunc("POST /processes/{pid}/stdin", s.handleProcessStdin)
	mux.HandleFunc("POST /processes/{pid}/signal", s.handleProcessSignal)
	mux.HandleFunc("POST /processes/{pid}/resize", s.handleProcessResize)
	mux.HandleFunc("GET /processes/{pid}/wait", s.handleProcessWait)
}

// Drain refuses every process start from now on, so that killing the
// tree (KillDescendants) leaves none behind.
func (s *Service) Drain() {
	s.startMu.Lock()
	s.draining = true
	s.startMu.Unlock()
}

// startProcess starts one child through the reaper unless Drain was
// called.
func (s *Service) startProcess(fork func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.draining {
		return 0, nil, ErrShuttingDown
	}
	return s.reaper.start(fork)
}

// credential is who a command runs as: the sandbox's user, or, when it
// asks for root, uid and gid 0 of the sandbox's user namespace. An agent
// that is not root there (the process driver's, which runs as the
// sandbox's own host uid) cannot give a command root.
func (s *Service) credential(root bool) (*syscall.Credential, error) {
	if !root || s.cfg.Credential == nil && os.Geteuid() == 0 {
		return s.cfg.Credential, nil
	}
	if os.Geteuid() != 0 {
		return nil, errdefs.Forbidden("root_unavailable", "commands cannot run as root in this sandbox: its driver runs everything as the sandbox's own unprivileged user")
	}
	return &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}, NoSetGroups: s.cfg.Credential.NoSetGroups}, nil
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, s.log, err)
}
