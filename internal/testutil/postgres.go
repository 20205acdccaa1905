package testutil

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
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// RequirePostgresEnv, set to 1, makes a test that needs Postgres fail
// rather than skip when Debian's postgresql is not installed: CI sets it.
const RequirePostgresEnv = "HUTCH_REQUIRE_POSTGRES"

// The one Postgres server of a test binary, started by the first
// PostgresURL and stopped by StopPostgres.
var pg struct {
	once   sync.Once
	server *postgresServer
	err    error
}

// postgresServer is a throwaway cluster: its own directory, a free
// loopback port, fsync off.
type postgresServer struct {
	bin, dir string
	port     int
	cred     *syscall.Credential
	proc     *exec.Cmd
	admin    *pgx.Conn
	mu       sync.Mutex // admin
}

// PostgresURL returns the URL of a new, empty database of t's own on the
// test binary's Postgres server, which it starts on first use from
// Debian's postgresql (the newest /usr/lib/postgresql/*/bin); the
// database is dropped when t ends. Without the binaries it skips t,
// unless RequirePostgresEnv is 1. The package's TestMain is
// RunWithPostgres, which stops the server after its tests.
func PostgresURL(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() { pg.server, pg.err = startPostgres() })
	var missing *postgresMissing
	switch {
	case errors.As(pg.err, &missing) && os.Getenv(RequirePostgresEnv) != "1":
		t.Skip(pg.err.Error())
	case pg.err != nil:
		t.Fatal(pg.err)
	}
	name := "t_" + ids.Token(8)
	if err := pg.server.exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if err := pg.server.exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return pg.server.url(name)
}

// RunWithPostgres is the TestMain of a package whose tests call
// PostgresURL: it runs them, stops the server, and exits with their
// code.
func RunWithPostgres(m *testing.M) {
	code := m.Run()
	StopPostgres()
	os.Exit(code)
}

// StopPostgres stops the server PostgresURL started, if it did, and
// removes its directory: for a TestMain that does more than
// RunWithPostgres after its tests.
func StopPostgres() {
	if s := pg.server; s != nil {
		s.stop()
	}
}

// postgresMissing is the error of a machine without Postgres.
type postgresMissing struct{ err error }

func (e *postgresMissing) Error() string {
	return fmt.Sprintf("Postgres is not installed (Debian package postgresql; %s=1 makes this a failure): %v", RequirePostgresEnv, e.err)
}

// postgresBin is the bin directory of the newest Postgres installed.
func postgresBin() (string, error) {
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
	return "", &postgresMissing{errors.New("no initdb in /usr/lib/postgresql/*/bin or on PATH")}
}

func startPostgres() (_ *postgresServer, retErr error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	s := &postgresServer{bin: bin}
	// Under os.TempDir, never the package's directory: a clone may live
	// in a directory only root can enter, and initdb refuses to run as
	// root, so the server runs as nobody then.
	if s.dir, err = os.MkdirTemp("", "hutch-postgres-"); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.stop()
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
	if out, err := s.command("initdb", "-D", s.path("data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale",
		"--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	// The postmaster is this process's child, killed with it: a test
	// binary that dies (a timeout) leaves no server behind.
	s.proc = s.command("postgres", "-D", s.path("data"), "-p", strconv.Itoa(s.port), "-k", s.path("sock"),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=500")
	s.proc.SysProcAttr.Pdeathsig = syscall.SIGKILL
	log, err := os.Create(s.path("postgres.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.proc.Stdout, s.proc.Stderr = log, log
	if err := s.proc.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.proc.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if s.admin, err = pgx.Connect(ctx, s.url("postgres")); err == nil {
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

// command runs one of the server's programs as the server's user, in
// its directory.
func (s *postgresServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *postgresServer) path(name string) string { return filepath.Join(s.dir, name) }

func (s *postgresServer) url(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// exec runs a statement on the server's own database.
func (s *postgresServer) exec(sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.admin.Exec(context.Background(), sql)
	return err
}

// stop stops the server at once (nothing in it is kept) and removes its
// directory.
func (s *postgresServer) stop() {
	if s.admin != nil {
		_ = s.admin.Close(context.Background())
	}
	if s.proc != nil {
		if out, err := s.command("pg_ctl", "stop", "-D", s.path("data"), "-m", "immediate").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "pg_ctl stop: %v\n%s", err, out)
			_ = s.proc.Process.Kill()
		}
	}
	_ = os.RemoveAll(s.dir)
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
