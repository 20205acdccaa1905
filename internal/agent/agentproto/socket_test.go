package agentproto

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketPathLong: a socket deeper than sockaddr_un allows can still be
// listened on and dialled.
func TestSocketPathLong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agent.sock")
	if len(p) <= maxSunPath {
		t.Fatalf("test path %q is not long", p)
	}
	lp, done, err := SocketPath(p)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", lp)
	done()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the socket is not at its long path: %v", err)
	}
	dp, done, err := SocketPath(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", dp)
	done()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Fatalf("read %q, %v", b, err)
	}
	// Short paths are used as they are.
	if sp, done, err := SocketPath("/tmp/x.sock"); err != nil || sp != "/tmp/x.sock" {
		t.Fatalf("short path = %q, %v", sp, err)
	} else {
		done()
	}
}
