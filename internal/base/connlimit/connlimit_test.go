package connlimit

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	l := New(raw, Config{PerClient: 3, Log: slog.New(slog.DiscardHandler)})
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
	l := New(raw, Config{PerClient: 1, Log: slog.New(slog.DiscardHandler)})
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

// server serves on a listener of cfg with its hooks: /auth marks its
// connection authenticated, /hold answers once hold is closed; it
// returns the listener and the server's address.
func server(t *testing.T, cfg Config, hold <-chan struct{}) (*Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = slog.New(slog.DiscardHandler)
	l := New(raw, cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/auth", func(_ http.ResponseWriter, r *http.Request) { Authenticated(r.Context()) })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-hold
	})
	srv := &http.Server{Handler: mux, IdleTimeout: time.Minute, ConnState: l.ConnState, ConnContext: l.ConnContext}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return l, raw.Addr().String()
}

// request sends GET path on c and reads the answer's head and, unless
// the path holds, its body; it fails t unless the answer is 200.
func request(t *testing.T, c net.Conn, br *bufio.Reader, path string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v, %v", path, resp, err)
	}
	if path != "/hold" {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp
}

// dialConn is a connection to addr with its reader.
type dialConn struct {
	net.Conn
	br *bufio.Reader
}

func dialTo(t *testing.T, addr string) dialConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return dialConn{c, bufio.NewReader(c)}
}

// closedWithin reports whether the server closes c within d.
func (c dialConn) closedWithin(d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.br.ReadByte()
	return err == io.EOF
}

// waitOpen waits until the listener counts n connections of 127.0.0.1.
func waitOpen(t *testing.T, l *Listener, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); l.Open(loopback) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open; want %d", l.Open(loopback), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var loopback = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}

// waitIdle waits until n connections of 127.0.0.1 are idle as the server
// reported them: it reports a connection idle after its answer is
// written, which a loaded host may delay past the client's read of it.
func waitIdle(t *testing.T, l *Listener, n int) {
	t.Helper()
	idle := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		k := 0
		if cl := l.clients[clientKey(loopback)]; cl != nil {
			for c := range cl.conns {
				if c.idle() {
					k++
				}
			}
		}
		return k
	}
	for deadline := time.Now().Add(5 * time.Second); idle() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle; want %d", idle(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleReplaced: at the cap a new connection is served, and the
// client's oldest idle connection closed in its place, one that never
// authenticated before one that did; the count stays at the cap.
func TestIdleReplaced(t *testing.T) {
	l, addr := server(t, Config{PerClient: 3}, nil)
	keyed := dialTo(t, addr)
	request(t, keyed, keyed.br, "/auth")
	silent := dialTo(t, addr)
	waitOpen(t, l, 2)
	anon := dialTo(t, addr)
	request(t, anon, anon.br, "/")
	waitIdle(t, l, 3)

	// The oldest idle connection is the keyed one, but it authenticated:
	// the silent one goes first, then the anonymous one.
	for i, gone := range []dialConn{silent, anon} {
		c := dialTo(t, addr)
		request(t, c, c.br, "/")
		if !gone.closedWithin(5 * time.Second) {
			t.Fatalf("new connection %d: the oldest anonymous idle connection is still open", i)
		}
		waitIdle(t, l, 3)
	}
	if keyed.closedWithin(100 * time.Millisecond) {
		t.Fatal("an authenticated connection closed while anonymous ones were idle")
	}
	// With every idle connection authenticated, the oldest goes.
	for range 3 {
		c := dialTo(t, addr)
		request(t, c, c.br, "/auth")
	}
	if !keyed.closedWithin(5 * time.Second) {
		t.Fatal("the oldest idle connection stayed open at the cap")
	}
	waitOpen(t, l, 3)
}

// TestBusyRefused: a client whose connections all carry a request keeps
// its cap: a new connection is closed unanswered; once one ends, the
// client is served again.
func TestBusyRefused(t *testing.T) {
	hold := make(chan struct{})
	l, addr := server(t, Config{PerClient: 3, AnonymousIdle: time.Minute}, hold)
	for range 3 {
		c := dialTo(t, addr)
		request(t, c, c.br, "/hold")
	}
	over := dialTo(t, addr)
	if !over.closedWithin(5 * time.Second) {
		t.Fatal("a connection over a cap of busy connections was kept")
	}
	waitOpen(t, l, 3)
	close(hold)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c := dialTo(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(time.Second))
		if resp, err := http.ReadResponse(c.br, nil); err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served once the requests ended")
		}
	}
}

// TestAnonymousIdle: a connection that never authenticated is closed
// after AnonymousIdle idle, whether it sent a request or not; one that
// authenticated stays for the server's IdleTimeout, as does one busy past
// AnonymousIdle until it is idle that long.
func TestAnonymousIdle(t *testing.T) {
	const anonIdle = 300 * time.Millisecond
	hold := make(chan struct{})
	l, addr := server(t, Config{PerClient: 16, AnonymousIdle: anonIdle}, hold)
	silent, anon, keyed, busy := dialTo(t, addr), dialTo(t, addr), dialTo(t, addr), dialTo(t, addr)
	request(t, anon, anon.br, "/")
	request(t, keyed, keyed.br, "/auth")
	held := request(t, busy, busy.br, "/hold")
	start := time.Now()
	for name, c := range map[string]dialConn{"without a request": silent, "after a request without a key": anon} {
		if !c.closedWithin(5 * time.Second) {
			t.Errorf("an idle connection %s stayed open", name)
		}
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("anonymous idle connections closed after %s; want about %s", time.Since(start), anonIdle)
	}
	if keyed.closedWithin(3 * anonIdle) {
		t.Error("an authenticated idle connection was closed")
	}
	if busy.closedWithin(anonIdle) {
		t.Error("a connection busy past AnonymousIdle was closed")
	}
	close(hold)
	io.Copy(io.Discard, held.Body)
	if !busy.closedWithin(5 * time.Second) {
		t.Error("an anonymous connection idle after a long request stayed open")
	}
	waitOpen(t, l, 1)
}

// TestExempt: a connection a request proved a peer's leaves its
// address's count, so the address may open its cap again beside it.
func TestExempt(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(raw, Config{PerClient: 1, Log: slog.New(slog.DiscardHandler)})
	srv := &http.Server{ConnState: l.ConnState, ConnContext: l.ConnContext,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/peer" {
				Exempt(r.Context())
			}
		})}
	go srv.Serve(l)
	defer srv.Close()
	peer, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	io.WriteString(peer, "GET /peer HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(peer), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the peer's request: %v, %v", resp, err)
	}
	if n := l.Open(peer.LocalAddr()); n != 0 {
		t.Fatalf("%d counted for the address after its connection proved a peer's; want 0", n)
	}
	// The cap of 1 is the address's again: a second connection is served
	// and the peer's stays open.
	resp, err := http.Get("http://" + raw.Addr().String() + "/other")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another connection beside the exempt one: %v, %v", resp, err)
	}
	resp.Body.Close()
	io.WriteString(peer, "GET /peer HTTP/1.1\r\nHost: x\r\n\r\n")
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(peer), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the exempt connection after another was opened: %v, %v", resp, err)
	}
}
