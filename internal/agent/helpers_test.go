package agent_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

const (
	testToken    = "0123456789abcdef0123456789abcdef-test"
	testMaxBytes = 1 << 20
)

// fixture is an agent server running in the test process on a real Unix
// socket, with a temporary directory as its root and root/work as its
// workdir, and a client for it.
type fixture struct {
	c    *agentclient.Client
	root string // the sandbox root, on the host
	work string // the workdir, on the host
	sock string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the server's configuration changed
// by configure (nil changes nothing) before the server starts.
func newFixtureWith(t *testing.T, configure func(*agent.Config)) *fixture {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Socket paths are short (108 bytes); t.TempDir can be long.
	sockDir, err := os.MkdirTemp("", "hutch-agent-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{
		SandboxID:    "sb-test",
		Token:        testToken,
		Root:         root,
		Workdir:      work,
		Env:          map[string]string{"FROM_ENVELOPE": "envelope", "SHARED": "envelope"},
		MaxFileBytes: testMaxBytes,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := agentclient.New("unix", sock, testToken)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &fixture{c: c, root: root, work: work, sock: sock}
}

// run execs req to completion and returns its output and result.
func (f *fixture) run(t *testing.T, req api.ExecRequest) (stdout, stderr string, res api.ExecResult) {
	t.Helper()
	s, err := f.c.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Cmd, err)
	}
	defer s.Close()
	o, e, res := collect(t, s)
	return string(o), string(e), res
}

func collect(t *testing.T, s *agentclient.ExecStream) (stdout, stderr []byte, res api.ExecResult) {
	t.Helper()
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return stdout, stderr, res
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch ev.Type {
		case api.ExecStdout:
			stdout = append(stdout, ev.Data...)
		case api.ExecStderr:
			stderr = append(stderr, ev.Data...)
		case api.ExecExit:
			res = *ev.Exit
		default:
			t.Fatalf("unknown event type %q", ev.Type)
		}
	}
}

// wantErr checks that err has class and code.
func wantErr(t *testing.T, what string, err error, class error, code string) {
	t.Helper()
	var e *errdefs.Error
	if !errors.As(err, &e) || !errors.Is(err, class) || e.Code != code {
		t.Errorf("%s: error %v, want class %v code %s", what, err, class, code)
	}
}

func writeHost(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a file through the agent.
func (f *fixture) readAll(t *testing.T, p string) (string, error) {
	t.Helper()
	rc, err := f.c.ReadFile(context.Background(), p)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b), nil
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// waitFor polls cond until it holds; it fails the test if it never does
// within a generous bound (a hang guard, not a performance threshold).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
