package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

var binDir string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		// The process driver runs without root too, but these tests check
		// per-sandbox uids and limits that need it.
		println("e2e: skipped, needs root")
		os.Exit(0)
	}
	dir, err := testutil.Build("cmd/hutch", "cmd/hutch-agent")
	if err != nil {
		panic(err)
	}
	// HUTCH_E2E_RACE=1 runs hutch serve built with the race detector; a
	// race it reports fails the test that ran the server.
	if os.Getenv("HUTCH_E2E_RACE") == "1" {
		if err := testutil.BuildRace(dir, "cmd/hutch"); err != nil {
			panic(err)
		}
	}
	binDir = dir
	code := m.Run()
	testutil.StopPostgres()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running `hutch serve`.
type server struct {
	t       *testing.T
	dataDir string
	url     string
	key     string
	cmd     *exec.Cmd
	pid     int // hutch serve's, which cmd's is unless cmd is a shell that runs it
	exited  chan error
	stderr  *logTail
	raced   atomic.Bool // the race detector reported a race (HUTCH_E2E_RACE)
}

// startServer runs hutch serve on a free loopback port over dataDir (a new
// one when empty) and waits until it serves.
func startServer(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	return startServerAs(t, nil, dataDir, args...)
}

// startServerAs is startServer with hutch serve running as cred (nil: as
// the test).
func startServerAs(t *testing.T, cred *syscall.Credential, dataDir string, args ...string) *server {
	t.Helper()
	s, _ := launch(t, cred, dataDir, nil, args...)
	return s
}

// launch runs hutch serve as cred (nil: as the test) over dataDir (a new
// one when empty), with env added to the test's environment, waits until
// it serves, and keeps the whole of its stderr.
func launch(t *testing.T, cred *syscall.Credential, dataDir string, env []string, args ...string) (*server, *fullLog) {
	t.Helper()
	if dataDir == "" {
		dataDir = testutil.DataDir(t)
	}
	cmd := exec.Command(filepath.Join(binDir, "hutch"), append([]string{"serve", "--listen", "127.0.0.1:0", "--data", dataDir}, args...)...)
	cmd.Env = append(append(os.Environ(), "HUTCH_API_KEY=", "HUTCH_URL="), env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return watch(t, cmd, dataDir, 30*time.Second)
}

// watch starts cmd, which runs hutch serve over dataDir, and waits (up to
// patience) until it serves.
func watch(t *testing.T, cmd *exec.Cmd, dataDir string, patience time.Duration) (*server, *fullLog) {
	t.Helper()
	s := &server{t: t, dataDir: dataDir, exited: make(chan error, 1), stderr: &logTail{}}
	full := &fullLog{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	go func() { s.exited <- cmd.Wait(); pw.Close() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.add(line)
			if strings.HasPrefix(line, "WARNING: DATA RACE") {
				s.raced.Store(true)
			}
			full.add(line)
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "hutch serving" {
				addr <- rec.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a
	case err := <-s.exited:
		t.Fatalf("hutch serve exited: %v\n%s", err, full)
	case <-time.After(patience):
		t.Fatalf("hutch serve did not start\n%s", full)
	}
	key, err := os.ReadFile(filepath.Join(dataDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	s.key = strings.TrimSpace(string(key))
	t.Cleanup(func() {
		s.stop(true)
		if s.raced.Load() {
			t.Errorf("hutch serve reported a data race")
		}
		if t.Failed() {
			t.Logf("hutch serve's log:\n%s", s.stderr)
		}
	})
	return s, full
}

// stop ends the server with SIGTERM and waits; destroy first removes every
// app and sandbox it can see, so tests leave nothing behind.
func (s *server) stop(destroy bool) {
	if s.cmd == nil {
		return
	}
	if destroy {
		c := s.client()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// Apps first: their sandboxes go with them, and only with them.
		if apps, err := c.Apps(ctx); err == nil {
			for _, a := range apps.Apps {
				if err := c.DeleteApp(ctx, a.ID); err != nil {
					s.t.Logf("stop: deleting app %s: %v", a.Name, err)
				}
			}
		}
		for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
			if err != nil {
				break
			}
			if sb.State != "destroyed" {
				if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
					s.t.Logf("stop: destroying %s (%s): %v", sb.ID, sb.State, err)
				}
			}
		}
		cancel()
	}
	_ = syscall.Kill(s.pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
		_ = s.cmd.Process.Kill()
		s.t.Errorf("hutch serve did not stop on SIGTERM\n%s", s.stderr)
	}
	s.cmd = nil
}

func (s *server) client() *client.Client { return client.New(s.url, s.key) }

// do sends a raw request with the admin key (or key, when set).
func (s *server) do(method, path, key string, body io.Reader) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if key == "" {
		key = s.key
	}
	if key != "-" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// logTail keeps the server's last log lines for failure messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 50 {
		l.lines = l.lines[1:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
