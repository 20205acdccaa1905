package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/client"
)

// TestIdleConnections: one client address cannot hold more than its cap
// of connections (it once locked a key holder out with 584 idle ones): a
// new connection closes the oldest idle one, and only when every one
// carries a request is it refused; another address is served all the
// same; and a kept-alive connection that sits idle is closed.
func TestIdleConnections(t *testing.T) {
	s := startServer(t, "", "--max-conns-per-client", "16", "--idle-timeout", "1s")
	addr := strings.TrimPrefix(s.url, "http://")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		defer c.SetReadDeadline(time.Time{})
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	// 40 connections that send nothing: each over the cap closes the
	// oldest, so the newest 16 stay (for --anonymous-idle-timeout).
	var idle []net.Conn
	for range 40 {
		idle = append(idle, dial())
	}
	// (Well within the 5 s of --anonymous-idle-timeout, which would close
	// them too.)
	for i, c := range idle[:24] {
		if !closedWithin(c, 2*time.Second) {
			t.Fatalf("idle connection %d of 40 is open; want the oldest 24 closed", i)
		}
	}
	for i, c := range idle[24:] {
		if closedWithin(c, 50*time.Millisecond) {
			t.Fatalf("idle connection %d of 40 closed; want the newest 16 open", 24+i)
		}
	}

	// 16 streams in flight: the client is at its cap of busy connections,
	// and a new one is refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 16 {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream %d: %v, %v", i, resp, err)
		}
		defer resp.Body.Close()
	}
	if over := dial(); !closedWithin(over, 2*time.Second) {
		t.Fatal("a connection over a cap of streams in flight was kept")
	}
	// Another address is served.
	other := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		return d.DialContext(ctx, network, a)
	}}}
	if _, err := client.New(s.url, s.key, client.WithHTTPClient(other)).Info(context.Background()); err != nil {
		t.Fatalf("a client at another address while one holds its cap: %v", err)
	}
	cancel()

	// A kept-alive connection that carries nothing more is closed after
	// --idle-timeout. The server learns the streams ended as it reads
	// their closes: until it has, a new connection is still refused, so
	// the first tries may be.
	var (
		c    net.Conn
		br   *bufio.Reader
		resp *http.Response
	)
	for deadline := time.Now().Add(5 * time.Second); ; {
		var err error
		if c, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		if _, err = io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+s.key+"\r\n\r\n"); err == nil {
			br = bufio.NewReader(c)
			if resp, err = http.ReadResponse(br, nil); err == nil {
				break
			}
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a connection after the streams ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle kept-alive connection: read = %v; want it closed", err)
	}
}

// holdIdle opens n connections to addr from this address, each sending a
// request with no key and reading its answer, then leaving the connection
// kept alive and idle; it returns them all, closed ones included. The
// connections close when the test ends.
func holdIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var held []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		held = append(held, c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			continue
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		c.SetDeadline(time.Time{})
	}
	return held
}

// TestIdleConnectionsKeyHolder: a neighbour at the key holder's address
// that fills the cap of connections (256) with idle ones and no key, and
// renews them, does not lock the key holder out: a new connection closes
// the oldest idle one rather than being refused.
func TestIdleConnectionsKeyHolder(t *testing.T) {
	s := startServer(t, "")
	addr := strings.TrimPrefix(s.url, "http://")
	ctx := context.Background()
	for round := range 3 {
		holdIdle(t, addr, 300)
		tr := &http.Transport{}
		_, err := client.New(s.url, s.key, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second})).Info(ctx)
		tr.CloseIdleConnections()
		if err != nil {
			t.Fatalf("round %d: the key holder behind 300 idle connections of its address: %v", round, err)
		}
	}
}

// TestIdleConnectionsAnonymous: a kept-alive connection that never showed
// a valid key, or never sent a request, is closed after a few seconds
// idle; one that carried a request with a key stays for --idle-timeout.
func TestIdleConnectionsAnonymous(t *testing.T) {
	s := startServer(t, "")
	addr := strings.TrimPrefix(s.url, "http://")
	anon := holdIdle(t, addr, 1)[0]
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	keyed, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()
	io.WriteString(keyed, "GET /v1/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+s.key+"\r\n\r\n")
	br := bufio.NewReader(keyed)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/info with the key: %v, %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	start := time.Now()
	for name, c := range map[string]net.Conn{"after a request without a key": anon, "without a request": silent} {
		c.SetReadDeadline(start.Add(8 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("an idle connection %s: read = %v after %s; want it closed within 8 s", name, err, time.Since(start).Round(time.Millisecond))
		}
	}
	keyed.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an idle connection after a request with a key: read = %v; want it kept (--idle-timeout 2m)", err)
	}
}
