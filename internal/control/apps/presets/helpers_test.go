package presets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/agent/manifest"
	"github.com/hutchdev/hutch/internal/testutil"
)

func mustGet(t *testing.T, name string) Preset {
	t.Helper()
	p, ok := Get(name)
	if !ok {
		t.Fatalf("Get(%q): not found", name)
	}
	return p
}

// readManifest is p's sandbox.yaml as package manifest, which owns the
// format, reads it.
func readManifest(t *testing.T, p Preset) *manifest.Manifest {
	t.Helper()
	data, err := fs.ReadFile(p.Files, manifest.FileName)
	if err != nil {
		t.Fatalf("%s: read sandbox.yaml: %v", p.Name, err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return m
}

// checkout writes p's files into a new temporary app dir, as the control
// plane does on an app's first boot.
func checkout(t *testing.T, p Preset) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(p.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(p.Files, path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatalf("%s: checkout: %v", p.Name, err)
	}
	return dir
}

// needTools skips the test, saying why, unless every tool is on PATH.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH (Debian: apt-get install -y nodejs npm python3-fastapi python3-uvicorn)", tool)
		}
	}
}

// npmEnv keeps npm's cache inside the test's temporary dirs.
func npmEnv(t *testing.T) []string {
	t.Helper()
	return []string{"npm_config_cache=" + t.TempDir(), "npm_config_update_notifier=false"}
}

// runSetup runs p.Setup in dir within p.SetupTimeoutS and says how long it
// took.
func runSetup(t *testing.T, p Preset, dir string, env []string) time.Duration {
	t.Helper()
	if p.Setup == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(p.SetupTimeoutS)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Setup[0], p.Setup[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: setup %q: %v\n%s", p.Name, p.Setup, err, out)
	}
	return time.Since(start)
}

// runShell runs command with /bin/sh -c in dir, as the build check does.
func runShell(t *testing.T, dir, command string, timeout time.Duration, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", command, err, out)
	}
}

// proc is a command started in its own process group, the way the
// in-sandbox supervisor runs a manifest's processes.
type proc struct {
	cmd    *exec.Cmd
	out    *testutil.Buffer
	exited chan struct{}
	err    error
}

// start runs command with /bin/sh -c in dir, with the supervisor's
// environment for role ("dev" or "live"); port 0 sets no PORT. The whole
// process group is killed in t.Cleanup.
func start(t *testing.T, dir, command, role string, port int, env []string) *proc {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "HUTCH_APP_ROLE="+role, "HUTCH_APP_BASE="+appBase(role))
	if port != 0 {
		cmd.Env = append(cmd.Env, "PORT="+strconv.Itoa(port))
	}
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", command, err)
	}
	p := &proc{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("output of %q:\n%s", command, out.String())
		}
	})
	return p
}

func appBase(role string) string {
	if role == "dev" {
		return "/dev/"
	}
	return "/"
}

// stop sends SIGTERM to the process group, waits up to 5s for the group
// to be gone, then kills whatever is left of it. It returns the shell's
// exit error.
func (p *proc) stop() error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if syscall.Kill(-pgid, 0) != nil {
			break // ESRCH: every process of the group has exited
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return p.err
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// front is a stand-in for hutch's router in front of one sandbox port: it
// strips prefix ("/dev" for the dev sandbox, "" for live) from the path,
// sets X-Forwarded-Prefix, and keeps the public Host header.
type front struct {
	url  string // http://127.0.0.1:<port>, where to connect
	host string // myapp.localhost:<port>, the Host header a browser sends
}

func newFront(t *testing.T, port int, prefix string) front {
	t.Helper()
	target := "127.0.0.1:" + strconv.Itoa(port)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = target
			if prefix != "" {
				pr.Out.URL.Path = stripPrefix(pr.In.URL.Path, prefix)
				if pr.In.URL.RawPath != "" {
					pr.Out.URL.RawPath = stripPrefix(pr.In.URL.RawPath, prefix)
				}
				pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			}
			pr.SetXForwarded()
		},
		FlushInterval: -1,
		// Connection refused while the server starts: the callers poll.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prefix != "" && r.URL.Path != prefix && !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.Error(w, "not the dev sandbox", http.StatusNotFound)
			return
		}
		rp.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	return front{url: srv.URL, host: "myapp.localhost:" + p}
}

func stripPrefix(path, prefix string) string {
	if p := strings.TrimPrefix(path, prefix); p != "" {
		return p
	}
	return "/"
}

// get fetches path through the front with the public Host header.
func (f front) get(ctx context.Context, path string) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = f.host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, err
}

// mustGet fetches path and fails the test unless it answers 200.
func (f front) mustGet(t *testing.T, path string) (string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	code, body, h, err := f.get(ctx, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if code != http.StatusOK {
		t.Fatalf("GET %s: status %d, want 200\n%s", path, code, body)
	}
	return body, h
}

// waitUp polls path through the front until it answers 200 and says how
// long that took; it fails the test if p exits first or within timeout.
func (f front) waitUp(t *testing.T, p *proc, path string, timeout time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	deadline := begin.Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		code, _, _, err := f.get(ctx, path)
		cancel()
		if err == nil && code == http.StatusOK {
			return time.Since(begin)
		}
		select {
		case <-p.exited:
			t.Fatalf("server exited before %s answered (%v):\n%s", path, p.err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: no 200 within %s (last: %d, %v)\n%s", path, timeout, code, err, p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitBody polls path until its body holds want.
func (f front) waitBody(t *testing.T, path, want string, timeout time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	var last string
	for time.Since(begin) < timeout {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		code, body, _, err := f.get(ctx, path)
		cancel()
		if err == nil && code == http.StatusOK && strings.Contains(body, want) {
			return time.Since(begin)
		}
		last = fmt.Sprintf("%d %v %.200s", code, err, body)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: no %q within %s (last: %s)", path, want, timeout, last)
	return 0
}

// waitOutput waits until the process has printed want.
func (p *proc) waitOutput(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output within %s:\n%s", want, timeout, p.out.String())
		}
		select {
		case <-p.exited:
			if !strings.Contains(p.out.String(), want) {
				t.Fatalf("exited (%v) without printing %q:\n%s", p.err, want, p.out.String())
			}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// editFile replaces old with new in dir/name, failing the test when old is
// not there.
func editFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s holds no %q", name, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sseEvents reads event names from a text/event-stream body into a
// channel, closed at the end of the stream.
func sseEvents(body io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event:"); ok {
				ch <- strings.TrimSpace(ev)
			}
		}
	}()
	return ch
}

var errNoPython = errors.New("no python3 that imports fastapi and uvicorn")

// fastapiPython finds a python3 that imports fastapi and uvicorn: the one
// on PATH, or Debian's (a pyenv shim may come first on a developer's PATH).
func fastapiPython() (string, error) {
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import fastapi, uvicorn").Run() == nil {
			return path, nil
		}
	}
	return "", errNoPython
}
