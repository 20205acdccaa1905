// Package pgtemp starts a throwaway Postgres cluster from Debian's
// postgresql package: its own directory under the system's temporary
// directory, a free loopback port, the postmaster a child of this process
// (killed with it), run as nobody when this process is root (initdb
// refuses root). Tests (testutil.PostgresURL) and benchmarks
// (bench/lifecycle -store postgres) use it; nothing in hutch serve does.
package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running throwaway cluster.
type Server struct {
	bin, dir string
	port     int
	cred     *syscall.Credential
	proc     *exec.Cmd
	admin    *pgx.Conn
	mu       sync.Mutex    // admin
	release  chan struct{} // closed by Stop: ends the thread that started the postmaster
}

// Options are how the cluster runs.
type Options struct {
	// Durable keeps Postgres's defaults for durability (fsync, synchronous
	// commits, full page writes), as a deployment runs it; without it
	// they are off, which tests, whose data dies with them, do not need.
	Durable bool
	// MaxConnections is the server's max_connections (0: 500).
	MaxConnections int
}

// Missing is the error of a machine without Postgres's binaries.
type Missing struct{ Err error }

func (e *Missing) Error() string {
	return fmt.Sprintf("Postgres is not installed (Debian package postgresql): %v", e.Err)
}

// Start initialises and starts a cluster, and returns once it accepts
// connections (within 30 s). Without the binaries the error is a
// *Missing.
func Start(opts Options) (_ *Server, retErr error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	// Under os.TempDir, never the caller's directory: a clone may live in
	// a directory only root can enter, and the server runs as nobody then.
	if s.dir, err = os.MkdirTemp("", "hutch-postgres-"); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.Stop()
		}
	}()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("postgres runs as nobody under root: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	for _, d := range []string{s.dir, s.path("sock")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if s.cred != nil {
			if err := os.Chown(d, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	initdb := []string{"-D", s.path("data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"}
	if !opts.Durable {
		initdb = append(initdb, "--no-sync")
	}
	if out, err := s.command("initdb", initdb...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 500
	}
	args := []string{"-D", s.path("data"), "-p", strconv.Itoa(s.port), "-k", s.path("sock"),
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=" + strconv.Itoa(opts.MaxConnections)}
	if !opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	s.proc = s.command("postgres", args...)
	s.proc.SysProcAttr.Pdeathsig = syscall.SIGKILL
	log, err := os.Create(s.path("postgres.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.proc.Stdout, s.proc.Stderr = log, log
	if err := s.startPinned(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.proc.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if s.admin, err = pgx.Connect(ctx, s.URL("postgres")); err == nil {
			return s, nil
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(s.path("postgres.log"))
			s.proc = nil
			return nil, fmt.Errorf("postgres exited: %v\n%s", err, out)
		case <-ctx.Done():
			return nil, fmt.Errorf("postgres did not accept connections in 30s: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startPinned starts the postmaster from an OS thread kept until Stop.
// Pdeathsig kills the child when the thread that started it ends, not the
// process, and Go ends threads: one locked to a goroutine that returns, as
// the namespace driver's are after they enter a sandbox's namespaces. A
// server started from such a thread died in the middle of a benchmark.
func (s *Server) startPinned() error {
	s.release = make(chan struct{})
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after Stop
		started <- s.proc.Start()
		<-s.release
	}()
	return <-started
}

// binDir is the bin directory of the newest Postgres installed.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", &Missing{errors.New("no initdb in /usr/lib/postgresql/*/bin or on PATH")}
}

// URL is the URL of database db on the server, as its superuser.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates the empty database name and returns its URL.
func (s *Server) CreateDatabase(name string) (string, error) {
	if err := s.Exec(`CREATE DATABASE ` + name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Exec runs a statement on the server's own database (CREATE DATABASE,
// DROP DATABASE).
func (s *Server) Exec(sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.admin.Exec(context.Background(), sql)
	return err
}

// Stop stops the server at once (nothing in it is kept) and removes its
// directory.
func (s *Server) Stop() {
	if s.admin != nil {
		_ = s.admin.Close(context.Background())
	}
	if s.proc != nil {
		if out, err := s.command("pg_ctl", "stop", "-D", s.path("data"), "-m", "immediate").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "pg_ctl stop: %v\n%s", err, out)
			_ = s.proc.Process.Kill()
		}
	}
	if s.release != nil {
		close(s.release)
	}
	_ = os.RemoveAll(s.dir)
}

// command runs one of the server's programs as the server's user, in its
// directory.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *Server) path(name string) string { return filepath.Join(s.dir, name) }

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
