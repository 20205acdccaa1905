package tunnel_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/tunnel"
)

// TestForwarderPasses: a forwarder that passes hands each connection to
// the channel whole (agentproto.EgressPassed with its descriptor) and
// copies nothing; one that does not carries its bytes.
func TestForwarderPasses(t *testing.T) {
	for _, pass := range []bool{false, true} {
		sock := filepath.Join(t.TempDir(), "egress.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dial := func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		f, err := tunnel.StartForwarder("127.0.0.1:0", dial, pass)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		client, err := net.Dial("tcp", f.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if _, err := io.WriteString(client, "ping"); err != nil {
			t.Fatal(err)
		}
		ch, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := ch.(*net.UnixConn).ReadMsgUnix(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		peer := ch // where the answer goes
		if pass {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(msgs) != 1 || n != 1 || buf[0] != agentproto.EgressPassed {
				t.Fatalf("passing: %q with %d control messages, %v", buf[:n], len(msgs), err)
			}
			fds, err := unix.ParseUnixRights(&msgs[0])
			if err != nil || len(fds) != 1 {
				t.Fatalf("passing: %v, %v", fds, err)
			}
			file := os.NewFile(uintptr(fds[0]), "passed")
			peer, err = net.FileConn(file)
			file.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The client's bytes are on the passed connection, unread.
			if n, err = peer.Read(buf); err != nil {
				t.Fatal(err)
			}
			// The forwarder is done with the channel.
			if _, err := ch.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("the channel after passing: %v, want it closed", err)
			}
		} else if oobn != 0 {
			t.Fatal("carrying bytes, the forwarder passed a descriptor")
		}
		if string(buf[:n]) != "ping" {
			t.Fatalf("pass %v: the proxy read %q", pass, buf[:n])
		}
		io.WriteString(peer, "pong")
		peer.Close()
		ch.Close()
		if b, err := io.ReadAll(client); err != nil || string(b) != "pong" {
			t.Fatalf("pass %v: the client read %q, %v", pass, b, err)
		}
	}
}
