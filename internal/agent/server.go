// Package agent is hutch-agent's server: the HTTP API it serves to the
// control plane on its Unix socket, the mutual authentication of every
// request, the event feed, health and shutdown, which kills the agent's
// whole process tree. The parts of the API are packages of their own,
// each with its routes: proc (exec and background processes), files (the
// file API confined to the sandbox root, tar, file history), watch (file
// watches), tunnel (tunnels to the sandbox's ports, the listening ports,
// the egress forwarder) and supervisor (the app's processes).
//
// Lifecycle: New (opens the root, starts the process-wide reaper), Serve on
// a listener, then Shutdown once, when a signal arrives or
// ShutdownRequested is closed; Close is for a server whose processes are
// someone else's to kill (tests).
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/agent/proc"
	"github.com/hutchdev/hutch/internal/agent/supervisor"
	"github.com/hutchdev/hutch/internal/agent/tunnel"
	"github.com/hutchdev/hutch/internal/agent/watch"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// DefaultMaxRequestBytes bounds a JSON request body (an exec request with
// its stdin, mkdir, move) when Config.MaxRequestBytes is zero.
const DefaultMaxRequestBytes = 16 << 20

// DefaultMaxTarBytes bounds what one tar upload unpacks (the sum of its
// files' sizes, holes of sparse files included) when Config.MaxTarBytes is
// zero and MaxFileBytes is smaller: the control plane's default bound on a
// tar upload's body, so an upload of plain files it lets through at its
// defaults is never refused here, while a sparse one, which costs its data
// in the body but its whole size on disk, unpacks no further.
const DefaultMaxTarBytes = 1 << 30

// DefaultMaxTarEntries bounds what one tar upload makes (files, symlinks,
// directories) when Config.MaxTarEntries is zero: about a million, several
// times a large node_modules tree; each costs an inode and a directory a
// block, whatever its size in the archive.
const DefaultMaxTarEntries = 1 << 20

// DefaultProcessOutputBytes is each background process's output buffer
// when Config.ProcessOutputBytes is zero.
const DefaultProcessOutputBytes = 1 << 20

// appCloseTimeout bounds how long Close waits for the app's processes to
// stop.
const appCloseTimeout = 10 * time.Second

// Config is what the server needs; ConfigFromEnvelope fills it from the
// bootstrap envelope.
type Config struct {
	SandboxID string
	// OwnNetwork: the driver says the agent's network namespace is the
	// sandbox's own (envelope.Envelope.OwnNetwork).
	OwnNetwork bool
	// Token is the shared secret of the HMAC authentication.
	Token string
	// ClientProtocol is the protocol of the control plane that started
	// the agent (the envelope's version): 1 means requests are signed the
	// protocol 1 way, over method and path only; zero means
	// agentproto.Protocol.
	ClientProtocol int
	// Root bounds the file API; Workdir is the default directory of
	// commands and of relative paths. Both are clean absolute paths,
	// Workdir inside Root.
	Root    string
	Workdir string
	// Env is every command's base environment; a request's env wins.
	Env map[string]string
	// MaxFileBytes bounds one file read or written, and each file of a tar
	// upload.
	MaxFileBytes int64
	// MaxTarBytes bounds the sum of the sizes of a tar upload's files, as
	// the archive declares them (a sparse file's holes count), and the
	// holes of a tar download's sparse files, which go as zeros; zero
	// means the larger of DefaultMaxTarBytes and MaxFileBytes.
	MaxTarBytes int64
	// MaxTarEntries bounds what one tar upload makes: each file and
	// symlink it writes and each directory it creates, those its entries'
	// names imply included; zero means DefaultMaxTarEntries.
	MaxTarEntries int
	// CommandRlimits are set on each command: through Prlimit (see
	// confine.PrlimitArgs) before it runs, or, without it, right after it
	// starts.
	CommandRlimits []confine.Rlimit
	Prlimit        string
	// Credential, when set, is the user and group every command runs as
	// (the agent needs CAP_SETUID and CAP_SETGID for it).
	Credential *syscall.Credential
	// AppCredential, when set, is who the app's processes run as instead
	// (see envelope.AppGID).
	AppCredential *syscall.Credential
	// Adopt, when set, is called with each command's pid right after it
	// starts (to move it into the sandbox's cgroup); an error kills the
	// command.
	Adopt func(pid int) error
	// MaxRequestBytes bounds a JSON request body; zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// ProcessOutputBytes bounds each background process's output buffer;
	// zero means DefaultProcessOutputBytes.
	ProcessOutputBytes int64
	// EgressDial, when set, opens a channel to the control plane's egress
	// proxy, and the agent forwards agentproto.EgressAddr inside the
	// sandbox to it.
	EgressDial func(ctx context.Context) (net.Conn, error)
	// EgressStreams, instead of EgressDial, carries the sandbox's egress
	// on requests the control plane keeps open (GET /egress,
	// tunnel.EgressStreams): for an agent its control plane dials (TCP)
	// and the sandbox cannot reach.
	EgressStreams bool
	// EgressPass hands each connection to the control plane whole, as a
	// descriptor over its channel (agentproto.EgressPassed), instead of
	// copying its bytes; the channel must then be a Unix socket.
	EgressPass bool
	// LayerSnapshots records what Root holds before the server serves and
	// answers GET /snapshot (envelope.Envelope.LayerSnapshots); the agent
	// must be pid 1 of the sandbox's pid namespace, whose processes it
	// stops for the copy.
	LayerSnapshots bool
	// Bootstrap, when set, makes a warm agent (envelope AwaitBootstrap):
	// it serves only GET /health and POST /bootstrap, whose body, the
	// sandbox's envelope sealed for Token (envelope.Seal), it opens and
	// hands to Bootstrap, once.
	Bootstrap func(*envelope.Envelope)
	// HistoryDir is where the file histories of tracked directories are
	// kept (internal/agent/files), in the agent's view; empty means
	// <Root>/.hutch-history (mode 0700): in the namespace driver the
	// sandbox's own /.hutch-history, which its commands (another uid)
	// cannot read or write, and under Root in the process driver, the
	// only place its agent may write.
	HistoryDir string
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
}

// ConfigFromEnvelope is the server's configuration for envelope e.
func ConfigFromEnvelope(e *envelope.Envelope, logger *slog.Logger) Config {
	return Config{
		SandboxID:          e.SandboxID,
		Token:              e.Token,
		ClientProtocol:     e.Version,
		Root:               e.Root,
		Workdir:            e.Workdir,
		Env:                e.Env,
		MaxFileBytes:       e.MaxFileBytes,
		MaxTarBytes:        e.MaxTarBytes,
		MaxTarEntries:      e.MaxTarEntries,
		ProcessOutputBytes: e.ProcessOutputBytes,
		CommandRlimits:     e.CommandRlimits,
		Prlimit:            e.Prlimit,
		Credential:         credential(e.RunAs),
		AppCredential:      appCredential(e.RunAs),
		OwnNetwork:         e.OwnNetwork,
		EgressStreams:      e.EgressStreams,
		LayerSnapshots:     e.LayerSnapshots,
		Logger:             logger,
	}
}

func (c *Config) validate() error {
	switch {
	case c.Token == "":
		return errors.New("agent: no token")
	case !path.IsAbs(c.Root) || path.Clean(c.Root) != c.Root:
		return fmt.Errorf("agent: root %q is not a clean absolute path", c.Root)
	case !path.IsAbs(c.Workdir) || path.Clean(c.Workdir) != c.Workdir ||
		(c.Root != "/" && c.Workdir != c.Root && !strings.HasPrefix(c.Workdir, c.Root+"/")):
		return fmt.Errorf("agent: workdir %q is not a clean path inside root %q", c.Workdir, c.Root)
	case c.MaxFileBytes <= 0:
		return errors.New("agent: MaxFileBytes must be positive")
	case c.MaxTarBytes < 0 || c.MaxTarEntries < 0:
		return errors.New("agent: MaxTarBytes and MaxTarEntries must not be negative")
	case c.MaxRequestBytes < 0:
		return errors.New("agent: MaxRequestBytes must not be negative")
	case c.ProcessOutputBytes < 0:
		return errors.New("agent: ProcessOutputBytes must not be negative")
	case c.HistoryDir != "" && (!path.IsAbs(c.HistoryDir) || path.Clean(c.HistoryDir) != c.HistoryDir):
		return fmt.Errorf("agent: history dir %q is not a clean absolute path", c.HistoryDir)
	}
	return nil
}

// maxStreams bounds the streams open at once on one HTTP/2 connection; the
// control plane bounds calls per sandbox well below it.
const maxStreams = 4096

// Server serves one sandbox's agent API.
type Server struct {
	cfg    Config
	log    *slog.Logger
	root   *files.Root
	nonces *nonceCache
	events *eventFeed
	procs  *proc.Service
	app    *supervisor.Supervisor // the app's processes, inert until PUT /app
	egress *tunnel.Forwarder      // nil without EgressDial
	// egressStreams carry the forwarder's connections with
	// Config.EgressStreams; nil otherwise.
	egressStreams *tunnel.EgressStreams
	// layers writes GET /snapshot's layer against baseline, recorded at
	// New; both nil without Config.LayerSnapshots.
	layers   *files.Service
	baseline *files.Baseline
	http     *http.Server

	shutdownOnce  sync.Once
	shutdownReq   chan struct{}
	bootstrapOnce sync.Once
	// stopping is closed when Shutdown begins: it ends the watches, which
	// never end by themselves and would hold the drain of requests.
	stopping chan struct{}
}

// New checks cfg, opens the sandbox root and starts the process-wide
// reaper. It listens on nothing yet.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.ProcessOutputBytes == 0 {
		cfg.ProcessOutputBytes = DefaultProcessOutputBytes
	}
	if cfg.MaxTarBytes == 0 {
		cfg.MaxTarBytes = max(DefaultMaxTarBytes, cfg.MaxFileBytes)
	}
	if cfg.MaxTarEntries == 0 {
		cfg.MaxTarEntries = DefaultMaxTarEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	root, err := files.OpenRoot(cfg.Root, cfg.Workdir)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:         cfg,
		log:         cfg.Logger,
		root:        root,
		nonces:      newNonceCache(),
		events:      newEventFeed(),
		shutdownReq: make(chan struct{}),
		stopping:    make(chan struct{}),
	}
	s.procs = proc.New(proc.Config{
		Root:            root,
		Env:             cfg.Env,
		CommandRlimits:  cfg.CommandRlimits,
		Prlimit:         cfg.Prlimit,
		Credential:      cfg.Credential,
		Adopt:           cfg.Adopt,
		MaxRequestBytes: cfg.MaxRequestBytes,
		OutputBytes:     cfg.ProcessOutputBytes,
		Exited:          s.processExited,
		Log:             cfg.Logger,
	})
	s.app = supervisor.New(supervisor.Config{
		Commands:        s.procs,
		Credential:      cfg.AppCredential,
		Root:            root,
		Stopping:        s.stopping,
		MaxRequestBytes: cfg.MaxRequestBytes,
		Log:             cfg.Logger,
	})
	fileAPI := files.New(files.Config{
		Root:            root,
		MaxFileBytes:    cfg.MaxFileBytes,
		MaxTarBytes:     cfg.MaxTarBytes,
		MaxTarEntries:   cfg.MaxTarEntries,
		MaxRequestBytes: cfg.MaxRequestBytes,
		HistoryDir:      cfg.HistoryDir,
		Log:             cfg.Logger,
	})
	if cfg.LayerSnapshots {
		if s.baseline, err = files.RecordBaseline(root); err != nil {
			root.Close()
			return nil, fmt.Errorf("agent: record the root for snapshots: %w", err)
		}
		s.layers = fileAPI
	}
	watches := watch.New(watch.Config{Root: root, Stopping: s.stopping, Log: cfg.Logger})
	tunnels := tunnel.New(tunnel.Config{OwnNetwork: cfg.OwnNetwork, Log: cfg.Logger})
	if cfg.EgressStreams {
		s.egressStreams = tunnel.NewEgressStreams(cfg.Logger)
		cfg.EgressDial, cfg.EgressPass = s.egressStreams.Dial, false
	}
	// HTTP/1.1 for a control plane of protocol 1, and HTTP/2 with prior
	// knowledge (h2c) on the same socket for protocol 2: one connection
	// then carries every call, stream and pushed event.
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	s.http = &http.Server{
		Handler:           s.authenticate(s.routes(fileAPI, watches, tunnels)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		Protocols:         protos,
		HTTP2: &http.HTTP2Config{
			// Every background process's output stream, every watch and
			// every terminal's input is a stream of the one connection.
			MaxConcurrentStreams: maxStreams,
			// Room for a burst of output or an upload before the peer
			// must read; the control plane reads as it goes.
			MaxReceiveBufferPerStream:     1 << 20,
			MaxReceiveBufferPerConnection: 8 << 20,
			MaxReadFrameSize:              1 << 20,
			// Pings keep a dead control plane from holding streams open.
			// Longer than the control plane's own period (agentclient), so
			// an idle connection carries its pings alone.
			SendPingTimeout: 2 * time.Minute,
			PingTimeout:     15 * time.Second,
		},
	}
	s.http.RegisterOnShutdown(func() { close(s.stopping) })
	if cfg.EgressDial != nil {
		if s.egress, err = tunnel.StartForwarder(agentproto.EgressAddr, cfg.EgressDial, cfg.EgressPass); err != nil {
			root.Close()
			return nil, fmt.Errorf("agent: egress forwarder: %w", err)
		}
	}
	return s, nil
}

// routes is the agent's API: the server's own routes, then each part's.
func (s *Server) routes(fileAPI *files.Service, watches *watch.Service, tunnels *tunnel.Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.handleHealth)
	if s.cfg.Bootstrap != nil {
		mux.HandleFunc("POST /bootstrap", s.handleBootstrap)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, errdefs.Conflict("agent_warm", "the agent waits for its sandbox (POST /bootstrap)"))
		})
		return mux
	}
	mux.HandleFunc("GET /events", s.handleEvents)
	mux.HandleFunc("POST /shutdown", s.handleShutdown)
	s.procs.Routes(mux) // /exec, /processes
	fileAPI.Routes(mux) // /files, /history
	watches.Routes(mux) // /files/watch
	tunnels.Routes(mux) // /tunnel/{port}, /ports
	s.app.Routes(mux)   // /app
	if s.egressStreams != nil {
		s.egressStreams.Routes(mux) // /egress
	}
	if s.baseline != nil {
		mux.HandleFunc("GET /snapshot", s.handleSnapshot)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errdefs.NotFound("unknown_route", "the agent has no route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// Serve answers requests on l until Shutdown or Close; it then returns nil.
func (s *Server) Serve(l net.Listener) error {
	if err := s.http.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ShutdownRequested is closed when a client asks the agent to shut down.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdownReq }

// Shutdown stops serving, refuses to start processes, kills every
// descendant of this process until none is left (they are reaped by the
// reaper), waits for the requests in flight to end and closes the root.
// It gives up waiting when ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.procs.Drain()
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.http.Shutdown(ctx) }()
	s.log.Info("shutdown: killing the process tree")
	s.app.Shutdown() // first, so it restarts nothing the kill ends
	killErr := proc.KillDescendants(ctx, os.Getpid())
	appErr := s.app.Wait(ctx)
	httpErr := <-httpDone
	if httpErr != nil {
		s.http.Close()
	}
	s.log.Info("shutdown: stopped serving")
	s.closeEgress()
	return errors.Join(killErr, appErr, httpErr, s.root.Close())
}

// Close stops serving at once and closes the root; it leaves processes
// alone but the app's, which it stops.
func (s *Server) Close() error {
	s.closeEgress()
	httpErr := s.http.Close()
	s.app.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), appCloseTimeout)
	defer cancel()
	return errors.Join(httpErr, s.app.Wait(ctx), s.root.Close())
}

func (s *Server) closeEgress() {
	if s.egress != nil {
		s.egress.Close()
	}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	httpio.WriteJSON(w, http.StatusOK, s.health())
}

func (s *Server) health() agentproto.Health {
	return agentproto.Health{OK: true, SandboxID: s.cfg.SandboxID, Pid: os.Getpid(), Info: agentproto.Current()}
}

func (s *Server) handleShutdown(w http.ResponseWriter, r *http.Request) {
	httpio.WriteJSON(w, http.StatusAccepted, s.health())
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, s.log, err)
}
