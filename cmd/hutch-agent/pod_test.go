package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
	var framed bytes.Buffer
	if err := envelope.Encode(&framed, ev); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dst, envelopeArg)
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
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready agentproto.Ready
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || !ready.Ready {
		t.Fatalf("ready line %q, %v; stderr:\n%s", line, err, stderr)
	}

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
