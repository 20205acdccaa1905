package namespace

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// TestPassListener: the egress socket's listener returns a sandbox's
// connection its agent passed, as itself (writes reach the sandbox's
// client, and it names the egress socket as its peer), and a channel of
// bytes as a channel, bytes first; a channel that waits to send does not
// hold up the others; a passed descriptor that is not a loopback TCP
// connection is refused with its channel; closing ends the waits.
func TestPassListener(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	raw, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln := listenPassed(raw)
	dial := func() *net.UnixConn {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	accept := func() net.Conn {
		t.Helper()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	pass := func(ch *net.UnixConn, fd int) {
		t.Helper()
		if _, _, err := ch.WriteMsgUnix([]byte{agentproto.EgressPassed}, unix.UnixRights(fd), nil); err != nil {
			t.Fatal(err)
		}
	}

	waiting := dial() // sends nothing yet
	// A channel of bytes.
	ch := dial()
	if _, err := ch.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	got := accept()
	if _, ok := got.(*channelConn); !ok {
		t.Fatalf("a channel of bytes came as a %T", got)
	}
	buf := make([]byte, 64)
	if n, err := got.Read(buf); err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\n" {
		t.Fatalf("the channel's first bytes: %q, %v", buf[:n], err)
	}

	// A passed connection: the sandbox's client on a loopback port.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	client, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, err := server.(*net.TCPConn).File()
	server.Close()
	if err != nil {
		t.Fatal(err)
	}
	ch = dial()
	pass(ch, int(f.Fd()))
	f.Close()
	got = accept()
	pc, ok := got.(*passedConn)
	if !ok {
		t.Fatalf("a passed connection came as a %T", got)
	}
	if got.RemoteAddr().Network() != "unix" {
		t.Errorf("a passed connection's peer is %v, not the egress socket's", got.RemoteAddr())
	}
	if _, err := io.WriteString(pc, "hello"); err != nil {
		t.Fatal(err)
	}
	pc.Close()
	if b, err := io.ReadAll(client); err != nil || string(b) != "hello" {
		t.Fatalf("the client read %q, %v", b, err)
	}

	// Something else passed: refused, its channel closed.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ch = dial()
	pass(ch, int(r.Fd()))
	ch.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ch.Read(buf); err != io.EOF {
		t.Fatalf("a channel that passed a pipe: %v, want it closed", err)
	}

	// The one that waited comes when it sends.
	if _, err := waiting.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := accept(); got.(*channelConn).head[0] != 'x' {
		t.Fatal("the waiting channel's byte")
	}

	// Closing ends the wait of a channel yet to send, and Accept.
	waiting = dial()
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	waiting.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := waiting.Read(buf); err != io.EOF {
		t.Errorf("a channel waiting as the listener closed: %v, want it closed", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
}
