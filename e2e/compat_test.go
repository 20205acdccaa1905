package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// previousRelease is the last commit before the agent protocol was
// versioned (protocol 1: HTTP/1.1, NDJSON, a MAC over method and path,
// envelope version 1, unknown fields refused). Templates carry agents
// this old; control planes this old may still drive new agents during an
// upgrade.
const previousRelease = "350579b86be2a52fc7de51bae06ff326ba276655"

// TestCompatPreviousAgent: this control plane drives the previous
// release's agent (it asks the binary its protocol, writes it a version 1
// envelope and speaks protocol 1 to it), and the previous release's
// control plane drives this agent (which accepts the old envelope and the
// old signature, and answers NDJSON when frames are not asked for).
func TestCompatPreviousAgent(t *testing.T) {
	old := buildRelease(t, previousRelease)
	t.Run("current control plane, previous agent", func(t *testing.T) {
		s, log := launch(t, nil, "", nil, "--agent", filepath.Join(old, "hutch-agent"))
		if !strings.Contains(log.String(), `"msg":"agent binary"`) || !strings.Contains(log.String(), `"protocol":1`) {
			t.Fatalf("the server did not take the previous agent for protocol 1:\n%s", log)
		}
		exerciseAgent(t, s)
	})
	t.Run("previous control plane, current agent", func(t *testing.T) {
		s := launchBinary(t, filepath.Join(old, "hutch"), "--agent", filepath.Join(binDir, "hutch-agent"))
		exerciseAgent(t, s)
	})
	t.Run("current control plane, current agent", func(t *testing.T) {
		s, log := launch(t, nil, "", nil)
		if !strings.Contains(log.String(), `"protocol":2`) {
			t.Fatalf("the server did not take its agent for protocol 2:\n%s", log)
		}
		exerciseAgent(t, s)
	})
}

// exerciseAgent runs what reaches the agent through s: exec, streamed
// exec, files, a tar upload, a background process with input and output.
func exerciseAgent(t *testing.T, s *server) {
	t.Helper()
	c := s.client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil || res.Stdout != "out\n" || res.Stderr != "err\n" || res.ExitCode != 3 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	st, err := c.ExecStream(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "printf '\\377\\376ok'"}})
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("exec stream: %v", err)
		}
		raw = append(raw, ev.Data...)
		if ev.Type == api.ExecExit {
			break
		}
	}
	st.Close()
	if string(raw) != "\377\376ok" {
		t.Errorf("streamed bytes %q, want %q", raw, "\377\376ok")
	}
	if _, err := c.WriteFile(ctx, sb.ID, "compat.txt", 0o644, strings.NewReader("written")); err != nil {
		t.Fatal(err)
	}
	rc, err := c.ReadFile(ctx, sb.ID, "compat.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "written" {
		t.Errorf("read back %q", b)
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "t/a", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("a"))
	tw.Close()
	if r, err := c.UploadTar(ctx, sb.ID, "up", &tb); err != nil || r.Files != 1 {
		t.Fatalf("tar upload = %+v, %v", r, err)
	}
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", `read x; echo "got $x"; exit 5`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteStdin(ctx, sb.ID, p.PID, strings.NewReader("line\n"), true); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	exit, err := c.CopyOutput(ctx, sb.ID, p.PID, 0, &out, &errb)
	if err != nil || out.String() != "got line\n" || exit.ExitCode == nil || *exit.ExitCode != 5 {
		t.Fatalf("process output %q, exit %+v, %v", out.String(), exit, err)
	}
	// The exit is recorded: through the event feed of a protocol 2
	// agent, a waiting request to a protocol 1 one.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventProcessExited}})
		if err == nil && len(evs.Events) == 1 && evs.Events[0].Data["exit_code"] == float64(5) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process.exited event: %+v, %v", evs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// buildRelease builds hutch and hutch-agent of commit rev of this
// repository into a temporary directory.
func buildRelease(t *testing.T, rev string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the compatibility test builds an earlier commit and needs the git checkout: %v", err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", strings.TrimSpace(string(top)), "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s (a shallow clone lacks it: git fetch --unshallow): %v\n%s", rev, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/hutch", "./cmd/hutch-agent")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", rev, err, out)
	}
	return bin
}

// launchBinary runs `hutch serve` of another build, the way launch runs
// this one's, over a new data directory.
func launchBinary(t *testing.T, hutch string, args ...string) *server {
	t.Helper()
	dataDir := testutil.DataDir(t)
	cmd := exec.Command(hutch, append([]string{"serve", "--listen", "127.0.0.1:0", "--data", dataDir}, args...)...)
	cmd.Env = append(os.Environ(), "HUTCH_API_KEY=", "HUTCH_URL=")
	s, _ := watch(t, cmd, dataDir, time.Minute)
	return s
}
