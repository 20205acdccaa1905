package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/testutil"
)

// agentBin is the hutch-agent binary TestMain builds.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hutch-agent-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, "hutch-agent")
	// Static, as it ships: confine needs a binary without cgo.
	build := exec.Command("go", "build", "-o", agentBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build hutch-agent: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const testToken = "binary-test-token-0123456789abcdef"

// agentProc is a running hutch-agent and a client for it.
type agentProc struct {
	cmd    *exec.Cmd
	ready  agentproto.Ready
	c      *agentclient.Client
	sock   string
	work   string
	stderr *testutil.Buffer
	waited chan error
}

// startAgent runs the binary with envelope ev (built by newEnvelope and
// edited by edit) on its stdin and reads its ready line.
func startAgent(t testing.TB, edit func(*envelope.Envelope)) *agentProc {
	t.Helper()
	ev := newEnvelope(t)
	if edit != nil {
		edit(ev)
	}
	var in bytes.Buffer
	if err := envelope.Encode(&in, ev); err != nil {
		t.Fatal(err)
	}
	a, line := launch(t, in.Bytes())
	if !a.ready.Ready {
		t.Fatalf("agent not ready: %s\nstderr:\n%s", line, a.stderr)
	}
	a.sock, a.work = ev.Socket, ev.Workdir
	a.c = agentclient.New("unix", ev.Socket, ev.Token)
	t.Cleanup(a.c.Close)
	return a
}

func newEnvelope(t testing.TB) *envelope.Envelope {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "hutch-agent-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	return &envelope.Envelope{
		Version:      envelope.Version,
		SandboxID:    "sb-binary",
		Token:        testToken,
		Socket:       filepath.Join(sockDir, "agent.sock"),
		Root:         root,
		Workdir:      work,
		Env:          map[string]string{"HUTCH_TEST": "1"},
		MaxFileBytes: 1 << 20,
	}
}

// launch starts the binary with stdin and returns it with its ready line.
func launch(t testing.TB, stdin []byte) (*agentProc, string) {
	t.Helper()
	a := &agentProc{cmd: exec.Command(agentBin), stderr: &testutil.Buffer{}, waited: make(chan error, 1)}
	a.cmd.Stdin = bytes.NewReader(stdin)
	a.cmd.Stderr = a.stderr
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { a.waited <- a.cmd.Wait() }()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Signal(syscall.SIGTERM)
		}
		<-a.waited
		if t.Failed() {
			t.Logf("agent stderr:\n%s", a.stderr)
		}
	})
	if err != nil {
		t.Fatalf("read the ready line: %v\nstderr:\n%s", err, a.stderr)
	}
	if err := json.Unmarshal([]byte(line), &a.ready); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return a, line
}

// exitCode waits for the agent to exit and returns its exit code.
func (a *agentProc) exitCode(t testing.TB) int {
	t.Helper()
	select {
	case <-a.waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit")
	}
	a.waited <- nil // for the cleanup
	return a.cmd.ProcessState.ExitCode()
}

func (a *agentProc) exec(t testing.TB, cmd ...string) (string, api.ExecResult) {
	t.Helper()
	s, err := a.c.Exec(context.Background(), api.ExecRequest{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []byte
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("exec %q: %v", cmd, err)
		}
		switch ev.Type {
		case api.ExecStdout:
			out = append(out, ev.Data...)
		case api.ExecExit:
			return string(out), *ev.Exit
		}
	}
}

func TestReadyAndExec(t *testing.T) {
	a := startAgent(t, nil)
	if a.ready.Pid != a.cmd.Process.Pid || a.ready.Confine != nil || a.ready.Error != "" {
		t.Errorf("ready = %+v, want pid %d and no confinement", a.ready, a.cmd.Process.Pid)
	}
	st, err := os.Stat(a.sock)
	if err != nil || st.Mode().Type() != fs.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Errorf("socket %v, %v; want a 0600 socket", st.Mode(), err)
	}
	h, err := a.c.Health(context.Background())
	if err != nil || !h.OK || h.SandboxID != "sb-binary" || h.Pid != a.cmd.Process.Pid {
		t.Errorf("Health = %+v, %v", h, err)
	}
	out, res := a.exec(t, "sh", "-c", "echo $HUTCH_TEST; pwd")
	if out != "1\n"+mustReal(t, a.work)+"\n" || res.ExitCode != 0 {
		t.Errorf("exec = %q exit %d", out, res.ExitCode)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := a.exitCode(t); code != 0 {
		t.Errorf("exit code after SIGTERM %d, want 0", code)
	}
	if _, err := os.Lstat(a.sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after exit: %v", err)
	}
}

// TestConfined runs the agent under its own confinement (no_new_privs,
// seccomp, Landlock with the sandbox root the only writable tree) and
// checks that what the agent itself needs still works: exec, the file API
// on its root fd, and the shutdown's walk of /proc.
func TestConfined(t *testing.T) {
	var root string
	a := startAgent(t, func(ev *envelope.Envelope) {
		root = ev.Root
		ev.Confine = &confine.Config{
			NoNewPrivs:      true,
			Seccomp:         true,
			RestrictSockets: true,
			Landlock: &confine.Landlock{
				ReadOnly:  []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev"},
				ReadWrite: []string{ev.Root, filepath.Dir(ev.Socket)},
			},
		}
	})
	if a.ready.Confine == nil {
		t.Fatal("ready line has no confinement report")
	}
	t.Logf("confinement: %+v", *a.ready.Confine)
	out, res := a.exec(t, "sh", "-c", "echo inside > in.txt && cat in.txt; echo outside > "+filepath.Dir(root)+"/hutch-confined-escape 2>/dev/null; echo $?")
	if !strings.HasPrefix(out, "inside\n") || res.ExitCode != 0 {
		t.Errorf("exec = %q exit %d", out, res.ExitCode)
	}
	if a.ready.Confine.LandlockABI > 0 {
		if status := strings.TrimPrefix(out, "inside\n"); status == "0\n" {
			t.Errorf("exec = %q, want the write outside the root refused", out)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(root), "hutch-confined-escape")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a confined command wrote outside the root: %v", err)
		}
	}
	if _, err := a.c.WriteFile(context.Background(), "f.txt", "", false, strings.NewReader("x")); err != nil {
		t.Errorf("WriteFile: %v", err)
	}
	out, _ = a.exec(t, "sh", "-c", "sleep 1000 & echo $!")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("exec = %q", out)
	}
	if err := a.c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := a.exitCode(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pid %d survived the shutdown of a confined agent", pid)
	}
}

func mustReal(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNotReady(t *testing.T) {
	good := newEnvelope(t)
	var goodFrame bytes.Buffer
	envelope.Encode(&goodFrame, good)
	notSocket := newEnvelope(t)
	if err := os.WriteFile(notSocket.Socket, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var notSocketFrame bytes.Buffer
	envelope.Encode(&notSocketFrame, notSocket)
	tests := []struct {
		name, errHas string
		stdin        []byte
	}{
		{"empty stdin", "envelope length", nil},
		{"garbage", "envelope length", []byte("hello world, not an envelope")},
		{"truncated", "envelope body", goodFrame.Bytes()[:goodFrame.Len()-3]},
		{"socket path is a file", "not a socket", notSocketFrame.Bytes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, line := launch(t, tt.stdin)
			if a.ready.Ready || !strings.Contains(a.ready.Error, tt.errHas) {
				t.Errorf("ready line %s, want ready false and an error with %q", line, tt.errHas)
			}
			if code := a.exitCode(t); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
		})
	}
	if b, err := os.ReadFile(notSocket.Socket); err != nil || string(b) != "x" {
		t.Errorf("the file at the socket path was touched: %q, %v", b, err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	a := startAgent(t, func(ev *envelope.Envelope) {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: ev.Socket, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
	})
	if _, err := a.c.Health(context.Background()); err != nil {
		t.Errorf("Health over the replaced socket: %v", err)
	}
}

// TestOrphansReaped: a background process whose parent exited is
// re-parented to the agent (a subreaper) and reaped when it exits: no
// zombie is left.
func TestOrphansReaped(t *testing.T) {
	a := startAgent(t, nil)
	out, res := a.exec(t, "sh", "-c", "(while [ ! -e go-on ]; do sleep 0.01; done) & echo $!")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %q exit %d", out, res.ExitCode)
	}
	if ppid := statField(pid, 4); ppid != strconv.Itoa(a.cmd.Process.Pid) {
		t.Fatalf("orphan %d has parent %s, want the agent %d", pid, ppid, a.cmd.Process.Pid)
	}
	if err := os.WriteFile(filepath.Join(a.work, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the orphan reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return errors.Is(err, fs.ErrNotExist)
	})
	waitFor(t, "the agent has no children", func() bool { return len(childrenOf(a.cmd.Process.Pid)) == 0 })
}

// TestShutdownKillsTree: POST /shutdown kills a running command, its
// background child and a grandchild that left the process group and the
// session with setsid, reaps them all, removes the socket and exits 0.
func TestShutdownKillsTree(t *testing.T) {
	a := startAgent(t, nil)
	s, err := a.c.Exec(context.Background(), api.ExecRequest{Cmd: []string{"sh", "-c",
		`echo $$; setsid sh -c 'echo $$; exec sleep 1000' & sleep 1000 & echo $!; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out string
	for strings.Count(out, "\n") < 3 {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("output so far %q: %v", out, err)
		}
		out += string(ev.Data)
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q", out)
		}
		pids = append(pids, pid)
	}
	sessions := map[string]bool{}
	for _, pid := range pids {
		sessions[statField(pid, 6)] = true
	}
	if len(sessions) != 2 {
		t.Fatalf("sessions of %v: %v; want the setsid grandchild in a session of its own", pids, sessions)
	}

	if err := a.c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := a.exitCode(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, pid := range pids {
		// The agent reaped them before it exited: not even a zombie is left.
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("pid %d (state %s) survived the shutdown", pid, statField(pid, 3))
		}
	}
	// The running exec ends: with its exit status if the agent sent it
	// before it exited, else with a broken stream.
	for {
		ev, err := s.Next()
		if err != nil {
			break
		}
		if ev.Type == api.ExecExit {
			if ev.Exit.Signal != "SIGKILL" {
				t.Errorf("exec exit %+v, want killed by SIGKILL", ev.Exit)
			}
			break
		}
	}
	if _, err := os.Lstat(a.sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after shutdown: %v", err)
	}
}

// BenchmarkExecTrue measures an exec round trip of true through the
// client and the real agent, and reports the agent's resident memory.
func BenchmarkExecTrue(b *testing.B) {
	a := startAgent(b, nil)
	for b.Loop() {
		if _, res := a.exec(b, "true"); res.ExitCode != 0 {
			b.Fatalf("true exited %d", res.ExitCode)
		}
	}
	b.StopTimer()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(a.cmd.Process.Pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(kb)[0])
			b.ReportMetric(float64(n)/1024, "agent-rss-MiB")
		}
	}
}

// statField returns field n (1-based, as in proc(5)) of /proc/pid/stat.
func statField(pid, n int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || n < 3 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if n-3 >= len(fields) {
		return ""
	}
	return fields[n-3]
}

func childrenOf(pid int) []string {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var kids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	return kids
}

// waitFor polls cond; the bound guards against a hang, it is not a
// performance threshold.
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
