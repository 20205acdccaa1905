package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/client"
)

// TestIdleConnections: one client address cannot hold more than its cap
// of connections (it once locked a key holder out with 584 idle ones),
// another address is served all the same, and a kept-alive connection
// that sits idle is closed.
func TestIdleConnections(t *testing.T) {
	s := startServer(t, "", "--max-conns-per-client", "16", "--idle-timeout", "1s")
	addr := strings.TrimPrefix(s.url, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	closed := 0
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 24 {
		t.Fatalf("%d of 40 idle connections from one address were closed; want the 24 over the cap of 16", closed)
	}
	// Another address is served.
	other := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		return d.DialContext(ctx, network, a)
	}}}
	if _, err := client.New(s.url, s.key, client.WithHTTPClient(other)).Info(context.Background()); err != nil {
		t.Fatalf("a client at another address while one holds its cap: %v", err)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil

	// A kept-alive connection that carries nothing more is closed. The
	// server learns of the 40 closes as it reads them: until it has, a new
	// connection is still over the cap and refused, so the first tries may
	// be.
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
		if _, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
			br = bufio.NewReader(c)
			if resp, err = http.ReadResponse(br, nil); err == nil {
				break
			}
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a connection after the others closed: %v", err)
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
