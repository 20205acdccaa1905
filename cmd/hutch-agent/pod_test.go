package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
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
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestPodModes: as the kubernetes driver runs it, the agent installs
// itself into a directory, then runs from there with its envelope in
// $HUTCH_AGENT_ENVELOPE and listens on TCP; a command it runs does not
// inherit the envelope, and a request without the token is refused.
func TestPodModes(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "hutch-agent")
	if out, err := exec.Command(agentBin, installArg, dst).CombinedOutput(); err != nil {
		t.Fatalf("install: %v: %s", err, out)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("installed agent: %v, %v; want mode 0555", fi, err)
	}

	ev := newEnvelope(t)
	ev.Socket, ev.Listen = "", "127.0.0.1:"+freePort(t)
	startPodAgent(t, ev, dst)

	c := agentclient.New("tcp", ev.Listen, ev.Token)
	defer c.Close()
	s, err := c.Exec(context.Background(), api.ExecRequest{Cmd: []string{"sh", "-c", "env"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got strings.Builder
	for {
		e, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == api.ExecStdout {
			got.Write(e.Data)
		}
		if e.Type == api.ExecExit {
			break
		}
	}
	if !strings.Contains(got.String(), "HUTCH_TEST=1") || strings.Contains(got.String(), envelopeEnv) {
		t.Errorf("a command's environment over TCP: %q; want the envelope's env and not the envelope", got.String())
	}

	impostor := agentclient.New("tcp", ev.Listen, strings.Repeat("x", 34))
	defer impostor.Close()
	if _, err := impostor.Stat(context.Background(), "."); err == nil {
		t.Error("a client with another token was answered")
	}
}

// TestPodSnapshot: an agent asked for layer snapshots, pid 1 of its pid
// namespace as in a Pod, writes what changed in its root since it
// started as a layer, with the sandbox's processes stopped meanwhile and
// going on after.
func TestPodSnapshot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a pid namespace of its own needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	ev := newEnvelope(t)
	ev.Socket, ev.Listen, ev.LayerSnapshots = "", "127.0.0.1:"+freePort(t), true
	// Commands and the file API as a user; the layer is the agent's,
	// and reaches what that user may not.
	ev.RunAs = &envelope.RunAs{UID: 65534, GID: 65534}
	if err := os.WriteFile(filepath.Join(ev.Workdir, "old"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, mode := range map[string]os.FileMode{filepath.Dir(ev.Root): 0o755, ev.Root: 0o755, ev.Workdir: 0o777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	private := filepath.Join(ev.Root, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // the image's files are older than the agent
	startPodAgent(t, ev, unshare, "--pid", "--fork", "--kill-child", "--mount-proc", agentBin)
	c := agentclient.New("tcp", ev.Listen, ev.Token)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.WriteFile(ctx, "new", "", false, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	busy, err := c.Exec(ctx, api.ExecRequest{Cmd: []string{"sh", "-c", "while :; do echo x >> busy; done"}})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := c.Stat(ctx, "busy"); err == nil && fi.Size > 0 {
			break
		}
		if time.Now().After(deadline) {
			ev, err := busy.Next()
			t.Fatalf("the writer wrote nothing within 10s: %+v, %v", ev, err)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Something new where the user cannot look.
	if err := os.WriteFile(filepath.Join(private, "key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	st, err := c.SnapshotLayer(ctx, &layer)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pause <= 0 || !st.Frozen {
		t.Errorf("snapshot %+v; want its processes stopped for a while", st)
	}
	names := map[string]int64{}
	tr := tar.NewReader(&layer)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = h.Size
	}
	if _, ok := names["work/old"]; ok || names["work/new"] != 3 || names["work/busy"] == 0 || names["private/key"] != 1 || len(names) != int(st.Entries) {
		t.Errorf("the layer holds %v (%d entries said); want work/new, work/busy and private/key, not work/old", names, st.Entries)
	}
	// Going on: the writer was continued.
	before, _ := c.Stat(ctx, "busy")
	deadline = time.Now().Add(10 * time.Second)
	for fi, _ := c.Stat(ctx, "busy"); fi.Size <= before.Size; fi, _ = c.Stat(ctx, "busy") {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's writer did not go on after the snapshot")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPodWarm: a warm agent, as the kubernetes driver's pool starts it,
// serves nothing but its health and POST /bootstrap; handed its
// sandbox's envelope, sealed for its own token, it serves that sandbox,
// with the sandbox's token only, on the same address.
func TestPodWarm(t *testing.T) {
	real := newEnvelope(t)
	real.Socket, real.Listen = "", "127.0.0.1:"+freePort(t)
	warm := newEnvelope(t)
	warm.Socket, warm.Listen, warm.AwaitBootstrap, warm.SandboxID = "", real.Listen, true, "pool-x"
	warm.Token = strings.Repeat("w", 40)
	startPodAgent(t, warm, agentBin)
	ctx := context.Background()
	wc := agentclient.New("tcp", warm.Listen, warm.Token)
	defer wc.Close()
	if h, err := wc.Health(ctx); err != nil || h.SandboxID != "pool-x" {
		t.Fatalf("a warm agent's health = %+v, %v", h, err)
	}
	if _, err := wc.Stat(ctx, "."); err == nil {
		t.Fatal("a warm agent served a file call")
	}
	wrong, err := envelope.Seal(real, strings.Repeat("x", 40))
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.Bootstrap(ctx, wrong); err == nil {
		t.Fatal("an envelope sealed for another token was taken")
	}
	sealed, err := envelope.Seal(real, warm.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.Bootstrap(ctx, sealed); err != nil {
		t.Fatal(err)
	}
	c := agentclient.New("tcp", real.Listen, real.Token)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := c.Health(ctx)
		if err == nil && h.SandboxID == real.SandboxID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bootstrapped agent did not answer as its sandbox's: %+v, %v", h, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.WriteFile(ctx, "hello", "", false, strings.NewReader("hi")); err != nil {
		t.Fatalf("a file call of the sandbox: %v", err)
	}
	stale := agentclient.New("tcp", real.Listen, warm.Token)
	defer stale.Close()
	if _, err := stale.Stat(ctx, "."); err == nil {
		t.Error("the warm token still reaches the sandbox's agent")
	}
}

// startPodAgent runs the agent as the kubernetes driver does, with ev in
// its environment, by argv, and waits for its ready line.
func startPodAgent(t *testing.T, ev *envelope.Envelope, argv ...string) {
	t.Helper()
	var framed bytes.Buffer
	if err := envelope.Encode(&framed, ev); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], append(argv[1:], envelopeArg)...)
	cmd.Env = append(os.Environ(), envelopeEnv+"="+base64.StdEncoding.EncodeToString(framed.Bytes()))
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// unshare(1) waits for its child with SIGTERM blocked, and its
		// --kill-child is lost as the agent changes its file-system ids:
		// the child, the agent, is killed first.
		pid := cmd.Process.Pid
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if argv[0] != agentBin && !strings.HasSuffix(argv[0], "hutch-agent") {
			for _, k := range strings.Fields(string(kids)) {
				if kid, err := strconv.Atoi(k); err == nil {
					syscall.Kill(kid, syscall.SIGKILL)
				}
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(time.Second, func() { cmd.Process.Kill() })
		defer t.Stop()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready agentproto.Ready
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || !ready.Ready {
		t.Fatalf("ready line %q, %v; stderr:\n%s", line, err, stderr)
	}
}

// freePort is a loopback TCP port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
