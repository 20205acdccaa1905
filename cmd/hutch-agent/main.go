// Command hutch-agent is the agent inside every sandbox. It reads its
// bootstrap envelope from stdin, makes itself non-dumpable and a child
// subreaper, listens on the envelope's Unix socket, confines itself, prints
// one ready line on stdout and then serves the control plane (see
// internal/agent) until SIGTERM, SIGINT or POST /shutdown, when it kills
// its whole process tree, removes its socket and exits 0.
//
// Under the namespace driver the agent is pid 1 of the sandbox's pid
// namespace: before it listens it builds the sandbox's root and enters it
// (internal/agent/nsinit), and it ignores every signal a process of the sandbox
// could send it. It then ends only on POST /shutdown or when the host kills
// it, which ends every process of the sandbox with it.
//
// Under the kubernetes driver (pod.go) an init container runs
// "hutch-agent -install DST" to copy the agent into the Pod, and the
// sandbox's container runs "hutch-agent -envelope-env": the envelope comes
// from $HUTCH_AGENT_ENVELOPE, and the agent listens on the envelope's TCP
// address, the Pod's, instead of a Unix socket.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/agent/proc"
	"github.com/hutchdev/hutch/internal/base/logattr"
)

// agentProcs is the agent's GOMAXPROCS. Go sizes it to the host's CPUs
// (the agent's cgroup has no CPU limit of its own; its commands' has), and
// every scheduler slot costs an idle agent threads, stacks and cached heap
// spans, paid once for every sandbox on the box, more on a larger host.
// The agent's work is system calls and copies between descriptors for
// commands that the sandbox's own CPU limit bounds: one slot is enough,
// and blocking calls still get threads of their own. Only as init of its
// sandbox (the namespace driver), whose cgroup keeps the agent room for
// threads above the commands' pids limit: under the process driver the
// agent shares its commands' limit, and a command that uses it up leaves
// the agent only the threads it made at start, which a runtime of more
// slots has more of (a thread it cannot make is fatal to Go).
const agentProcs = nsinit.Procs

// shutdownTimeout bounds killing the tree and draining the requests.
const shutdownTimeout = 10 * time.Second

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) == 2 && os.Args[1] == "-protocol" {
		// The control plane asks a binary what it speaks before it writes
		// the binary an envelope. An agent of protocol 1 knows no
		// arguments: it reads an envelope from stdin and fails.
		return printProtocol()
	}
	if len(os.Args) == 3 && os.Args[1] == installArg {
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "hutch-agent: install: %v\n", err)
			return 1
		}
		return 0
	}
	if len(os.Args) == 3 && os.Args[1] == nsinit.SpawnArg {
		// The namespace driver's first stage (nsinit.Spawn): start the
		// agent in the sandbox's namespaces, report its pid, exit.
		return nsinit.Spawn(os.Args[0], os.Args[2], os.Stdout)
	}
	// Whatever descriptor the agent was started with beyond stdin, stdout
	// and stderr (one hutch's own parent left open, say) must not pass on
	// to a command: one of a host directory would be a way out of any
	// root.
	if err := closeOnExecAbove2(); err != nil {
		fmt.Fprintf(os.Stderr, "hutch-agent: mark inherited descriptors close-on-exec: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Before anything starts, so a signal during start-up is not lost.
	sigs := make(chan os.Signal, 1)
	if os.Getpid() == 1 {
		// One scheduler slot: see agentProcs. The driver's environment
		// already says so (nsinit.Env), which makes this a no-op; an
		// agent started without it drops its other slots here.
		runtime.GOMAXPROCS(agentProcs)
		// As init of the sandbox's pid namespace the kernel already drops
		// SIGKILL and SIGSTOP from inside it; catching every other signal
		// keeps the Go runtime from dying of one. Only the host can stop
		// the agent, by killing it; but a Pod's agent (below) ends on
		// SIGTERM, the kubelet's, so a Pod's deletion ends its processes
		// at once rather than after its grace period.
		ignoreSignals(sigs)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}

	env, err := readEnvelope(os.Args)
	if err == nil && os.Getpid() == 1 && env.Listen == "" {
		sigs = nil // the namespace driver's: no signal ends it
	}
	if err == nil && env.AwaitBootstrap {
		env, err = awaitBootstrap(log, env, sigs)
		if env == nil && err == nil {
			return 0 // ended before a sandbox was its
		}
	}
	var srv *agent.Server
	var ln net.Listener
	if err == nil {
		srv, ln, err = start(log, env, nil)
	}
	if err != nil {
		log.Error("agent failed to start", "err", err)
		ready(agentproto.Ready{Error: err.Error()})
		return 1
	}
	log = log.With(logattr.Sandbox(env.SandboxID))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("agent serving", "socket", env.Socket, "listen", env.Listen, "pid", os.Getpid())

	select {
	case s := <-sigs:
		log.Info("shutting down", "signal", s.String())
	case <-srv.ShutdownRequested():
		log.Info("shutting down", "reason", "requested")
	case err := <-served:
		log.Error("serving failed", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	code := 0
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("shutdown", "err", err)
		code = 1
	}
	// Under the namespace driver the socket is out of the agent's sight
	// now, and the driver removes it with the sandbox's directory.
	if env.Namespace == nil && env.Listen == "" {
		if err := os.Remove(env.Socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("remove socket", "err", err)
		}
	}
	log.Info("agent stopped")
	return code
}

// awaitBootstrap serves a warm agent's envelope (only POST /bootstrap)
// until the control plane hands it its sandbox's, which it returns; nil
// when a signal ended it first.
func awaitBootstrap(log *slog.Logger, warm *envelope.Envelope, sigs <-chan os.Signal) (*envelope.Envelope, error) {
	boot := make(chan *envelope.Envelope, 1)
	srv, ln, err := start(log, warm, func(e *envelope.Envelope) { boot <- e })
	if err != nil {
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("warm agent waiting for its sandbox", "listen", warm.Listen)
	var env *envelope.Envelope
	select {
	case env = <-boot:
	case <-sigs:
	case err = <-served:
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// It closes the listener: the sandbox's server listens anew.
	if serr := srv.Shutdown(ctx); serr != nil && err == nil {
		log.Warn("warm agent shutdown", "err", serr)
	}
	return env, err
}

// start does everything before the ready line for env: process
// attributes, socket, server, confinement. It prints the ready line.
// boot, when set, makes the server a warm agent's (agent.Config.Bootstrap).
func start(log *slog.Logger, env *envelope.Envelope, boot func(*envelope.Envelope)) (_ *agent.Server, _ net.Listener, retErr error) {
	var err error
	if env.ExecFD > 2 {
		if err := unix.Close(env.ExecFD); err != nil {
			return nil, nil, fmt.Errorf("close the descriptor the agent was executed through: %w", err)
		}
	}
	// Non-dumpable: a process of the same uid cannot ptrace the agent or
	// read its memory (and the token in it) through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	// Subreaper: orphans of the commands come back to the agent, so it
	// reaps them and can kill the whole tree.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	var ln net.Listener
	listenOnce := func() error {
		if env.Listen != "" {
			ln, err = listenTCP(env.Listen)
			return err
		}
		socket := env.Socket
		if env.Namespace != nil {
			socket = env.Namespace.Path(socket)
		}
		ln, err = listen(socket)
		return err
	}
	cfg := agent.ConfigFromEnvelope(env, log.With(logattr.Sandbox(env.SandboxID)))
	cfg.Bootstrap = boot
	if env.Namespace != nil {
		box, err := nsinit.Setup(env.Namespace, listenOnce, proc.OnForkThread)
		if ln != nil {
			defer func() {
				if retErr != nil {
					ln.Close()
				}
			}()
		}
		if err != nil {
			return nil, nil, err
		}
		cfg.Adopt = box.Adopt
		if box.HasEgress() {
			cfg.EgressDial, cfg.EgressPass = box.DialEgress, box.EgressPass()
		}
	} else {
		if err := listenOnce(); err != nil {
			return nil, nil, err
		}
		defer func() {
			if retErr != nil {
				ln.Close()
			}
		}()
	}
	srv, err := agent.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if retErr != nil {
			srv.Close()
		}
	}()
	if env.CommandCaps != nil {
		if err := proc.OnForkThread(func() error { return confine.DropBounding(env.CommandCaps) }); err != nil {
			return nil, nil, err
		}
	}
	if env.RunAs != nil {
		if err := fileUser(env.RunAs); err != nil {
			return nil, nil, err
		}
	}
	// After listening, so Landlock need not allow making the socket.
	var report *confine.Report
	if env.Confine != nil {
		r, err := confine.Apply(env.Confine)
		if err != nil {
			return nil, nil, err
		}
		report = &r
	}
	if err := ready(agentproto.Ready{Ready: true, Pid: os.Getpid(), Confine: report, Info: agentproto.Current()}); err != nil {
		return nil, nil, fmt.Errorf("write the ready line: %w", err)
	}
	// Nothing else goes to stdout: it becomes stderr.
	if err := unix.Dup3(2, 1, 0); err != nil {
		return nil, nil, fmt.Errorf("dup stderr over stdout: %w", err)
	}
	return srv, ln, nil
}

// listen makes the agent's socket, 0600, replacing a stale one.
func listen(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("socket path %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	short, done, err := agentproto.SocketPath(path)
	if err != nil {
		return nil, err
	}
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", short)
	unix.Umask(old)
	done()
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The listener must not unlink the socket on Close: shutdown does, once
	// the tree is dead.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, nil
}

// printProtocol writes this agent's protocol and features on stdout.
func printProtocol() int {
	b, err := json.Marshal(agentproto.Current())
	if err != nil {
		return 1
	}
	if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
		return 1
	}
	return 0
}

// ready writes the one ready line to stdout.
func ready(r agentproto.Ready) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(b, '\n'))
	return err
}
