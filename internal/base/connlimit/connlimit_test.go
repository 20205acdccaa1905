package connlimit

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// TestCapPerClient: one address holds at most the cap; another address is
// served all the same; a closed connection frees its place.
func TestCapPerClient(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 3, slog.New(slog.DiscardHandler))
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var mine []net.Conn
	for range 3 {
		mine = append(mine, dial("127.0.0.1"))
		<-accepted
	}
	over := dial("127.0.0.1")
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := over.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection over the cap: read = %v; want it closed (EOF)", err)
	}
	other := dial("127.0.0.2")
	select {
	case c := <-accepted:
		if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
			t.Fatalf("accepted %s; want the other address", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another address was not served")
	}
	other.Close()
	if n := l.Open(mine[0].LocalAddr()); n != 3 {
		t.Fatalf("%d open for 127.0.0.1; want 3", n)
	}
}

// TestRelease: a server-side close gives the place back.
func TestRelease(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, 1, slog.New(slog.DiscardHandler))
	defer l.Close()
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s.Close()
		c.Close()
	}
	if n := l.Open(&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}); n != 0 {
		t.Fatalf("%d still counted", n)
	}
}
