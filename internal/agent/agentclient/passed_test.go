package agentclient_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// TestPassedTunnelChecked: a subverted agent that passes, as a tunnel's
// socket, a descriptor of a file or of a Unix socket (its channel to the
// control plane's egress proxy, say) is refused, and nothing is kept.
func TestPassedTunnelChecked(t *testing.T) {
	file, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	for name, fd := range map[string]int{"a file": int(file.Fd()), "a unix socket": pair[0]} {
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "a.sock")
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.AcceptUnix()
				if err != nil {
					return
				}
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				answer := "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + agentclient.TunnelProtocol + "\r\n" +
					agentproto.HeaderProof + ": " + agentproto.Proof(token, req.Header.Get(agentproto.HeaderNonce)) + "\r\n" +
					agentproto.HeaderTunnel + ": " + agentproto.TunnelPassed + "\r\n\r\n"
				c.WriteMsgUnix([]byte(answer), unix.UnixRights(fd), nil)
			}()
			c := agentclient.New("unix", sock, token)
			defer c.Close()
			conn, err := c.Tunnel(context.Background(), 8080)
			var e *errdefs.Error
			if err == nil {
				conn.Close()
			}
			if !errors.As(err, &e) || e.Code != "agent_bad_answer" {
				t.Fatalf("Tunnel = %v, want agent_bad_answer", err)
			}
		})
	}
}
