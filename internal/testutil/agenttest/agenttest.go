// Package agenttest runs the agent's server (internal/agent) in a test's
// own process on a real Unix socket, with a temporary directory as its
// root, and talks to it through the control plane's client, so the
// agent's packages test their routes end to end; and it holds the helpers
// those tests share.
package agenttest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

const (
	// Token is the fixtures' shared secret.
	Token = "0123456789abcdef0123456789abcdef-test"
	// MaxFileBytes is the fixtures' Config.MaxFileBytes.
	MaxFileBytes = 1 << 20
)

// Fixture is an agent server running in the test process on a real Unix
// socket, with a temporary directory as its root and root/work as its
// workdir, and a client for it.
type Fixture struct {
	Client *agentclient.Client
	Root   string // the sandbox root, on the host
	Work   string // the workdir, on the host
	Sock   string
}

// New starts a fixture whose configuration configure changes (nil
// changes nothing) before the server starts; the test's cleanup stops it.
func New(t *testing.T, configure func(*agent.Config)) *Fixture {
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
		Token:        Token,
		Root:         root,
		Workdir:      work,
		Env:          map[string]string{"FROM_ENVELOPE": "envelope", "SHARED": "envelope"},
		MaxFileBytes: MaxFileBytes,
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
	c := agentclient.New("unix", sock, Token)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &Fixture{Client: c, Root: root, Work: work, Sock: sock}
}

// RawClient speaks HTTP to the fixture's socket with no signing of its
// own.
func (f *Fixture) RawClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", f.Sock)
		},
	}}
}

// Sign sets the nonce, HeaderBody and MAC of a protocol 2 request, signed
// over method, path, query and body, which need not be req's own.
func Sign(req *http.Request, token, nonce, method, path, query, body string) {
	req.Header.Set(agentproto.HeaderNonce, nonce)
	req.Header.Set(agentproto.HeaderBody, body)
	req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMAC(token, nonce, method, path, query, body))
}

// Run execs req to completion and returns its output and result.
func (f *Fixture) Run(t *testing.T, req api.ExecRequest) (stdout, stderr string, res api.ExecResult) {
	t.Helper()
	s, err := f.Client.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Cmd, err)
	}
	defer s.Close()
	o, e, res := Collect(t, s)
	return string(o), string(e), res
}

// Collect reads an exec stream to its end.
func Collect(t *testing.T, s *agentclient.ExecStream) (stdout, stderr []byte, res api.ExecResult) {
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

// ReadAll reads a file through the agent.
func (f *Fixture) ReadAll(t *testing.T, p string) (string, error) {
	t.Helper()
	rc, err := f.Client.ReadFile(context.Background(), p)
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

// WantErr checks that err has class and code.
func WantErr(t *testing.T, what string, err error, class error, code string) {
	t.Helper()
	var e *errdefs.Error
	if !errors.As(err, &e) || !errors.Is(err, class) || e.Code != code {
		t.Errorf("%s: error %v, want class %v code %s", what, err, class, code)
	}
}

// WriteHost writes a file on the host, making its directory.
func WriteHost(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Symlink makes a symlink on the host.
func Symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// Dead reports whether pid is gone or a zombie.
func Dead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// WaitFor polls cond until it holds; it fails the test if it never does
// within a generous bound (a hang guard, not a performance threshold).
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
