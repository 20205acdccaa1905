package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
)

// fixture is a target server on loopback and a sandbox's proxy.
type fixture struct {
	target  *httptest.Server
	sb      *Sandbox
	proxy   *url.URL
	mu      sync.Mutex
	reports []string
}

func newFixture(t *testing.T, cfg *Config, p api.NetworkPolicy) *fixture {
	t.Helper()
	f := &fixture{}
	f.target = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.URL.Path)
	}))
	t.Cleanup(f.target.Close)
	pol, err := netpolicy.Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	f.sb = NewSandbox("sb", cfg, pol, func(host string, port uint16, d netpolicy.Decision, out, in int64) {
		f.mu.Lock()
		defer f.mu.Unlock()
		verdict := "denied"
		if d.Allowed {
			verdict = "allowed"
		}
		f.reports = append(f.reports, verdict+" "+host)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go Serve(ln, f.sb)
	f.proxy = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return f
}

// get fetches u through the proxy; https would CONNECT, plain http is
// forwarded. It returns the status, or 0 and the error.
func (f *fixture) get(t *testing.T, u string, connect bool) (int, string) {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(f.proxy)}
	if connect {
		// A CONNECT tunnel, then plain HTTP over it.
		tr = &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			c, err := net.Dial("tcp", f.proxy.Host)
			if err != nil {
				return nil, err
			}
			req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
			if _, err := c.Write([]byte(req)); err != nil {
				return nil, err
			}
			buf := make([]byte, 39)
			n, _ := io.ReadAtLeast(c, buf, 12)
			if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
				c.Close()
				return nil, errors.New("CONNECT refused: " + string(buf[:n]))
			}
			return c, nil
		}}
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func port(s *httptest.Server) string { return s.Listener.Addr().(*net.TCPAddr).AddrPort().String() }

func TestPublicRefusesInternal(t *testing.T) {
	f := newFixture(t, &Config{}, api.NetworkPolicy{Egress: "public"})
	p := port(f.target)
	for _, tc := range []struct {
		url     string
		connect bool
	}{
		{"http://" + p + "/x", false},
		{"http://" + p + "/x", true},
		{"http://localhost:" + strings.Split(p, ":")[1] + "/x", false}, // a name that resolves to loopback
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://[::1]:" + strings.Split(p, ":")[1] + "/", false},
		{"http://10.1.2.3/", true},
	} {
		if code, body := f.get(t, tc.url, tc.connect); code == 200 {
			t.Errorf("public reached %s (connect %v): %s", tc.url, tc.connect, body)
		}
	}
	if f.sb.Denied.Load() != 6 || f.sb.Allowed.Load() != 0 {
		t.Errorf("counters: %d denied, %d allowed", f.sb.Denied.Load(), f.sb.Allowed.Load())
	}
}

func TestRebindingRefused(t *testing.T) {
	cfg := &Config{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // a public name that answers loopback
	}}
	f := newFixture(t, cfg, api.NetworkPolicy{Egress: "public"})
	if code, body := f.get(t, "http://rebind.example:"+strings.Split(port(f.target), ":")[1]+"/", false); code == 200 {
		t.Fatalf("a name resolving to loopback got through: %s", body)
	}
}

func TestNoneRefusesAll(t *testing.T) {
	f := newFixture(t, &Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, api.NetworkPolicy{Egress: "none"})
	if code, _ := f.get(t, "http://"+port(f.target)+"/", false); code != http.StatusForbidden {
		t.Fatalf("none: %d, want 403", code)
	}
}

// TestAllowlistPrivate: a private address needs both the operator's range
// and the allowlist; a policy change applies to the next connection.
func TestAllowlistPrivate(t *testing.T) {
	loop := &Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	// Named, but the operator allows nothing private.
	f := newFixture(t, &Config{}, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"127.0.0.1"}})
	if code, _ := f.get(t, "http://"+port(f.target)+"/a", false); code == 200 {
		t.Fatal("a private address without the operator's range got through")
	}
	// The operator allows loopback, but the allowlist does not name it.
	f = newFixture(t, loop, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"example.com"}})
	if code, _ := f.get(t, "http://"+port(f.target)+"/a", false); code == 200 {
		t.Fatal("an address the allowlist does not name got through")
	}
	// Both: through, by CONNECT and by plain HTTP, and by name.
	f = newFixture(t, loop, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"127.0.0.0/8", "localhost"}})
	for _, connect := range []bool{false, true} {
		if code, body := f.get(t, "http://"+port(f.target)+"/ok", connect); code != 200 || body != "hello from /ok" {
			t.Fatalf("allowed (connect %v): %d %q", connect, code, body)
		}
	}
	if code, body := f.get(t, "http://localhost:"+strings.Split(port(f.target), ":")[1]+"/name", false); code != 200 || body != "hello from /name" {
		t.Fatalf("allowed by name: %d %q", code, body)
	}
	// The next connection sees a new policy.
	pol, _ := netpolicy.Parse(api.NetworkPolicy{Egress: "none"})
	f.sb.SetPolicy(pol)
	if code, _ := f.get(t, "http://"+port(f.target)+"/after", false); code != http.StatusForbidden {
		t.Fatalf("after the change to none: %d, want 403", code)
	}
	// A tunnel is counted and reported when both its ends have closed,
	// which may be after the client has its answer; the count comes first.
	reported := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.reports)
	}
	for deadline := time.Now().Add(5 * time.Second); (f.sb.Allowed.Load() < 3 || reported() < 4) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if f.sb.Allowed.Load() != 3 || f.sb.Denied.Load() != 1 || f.sb.BytesIn.Load() == 0 {
		t.Errorf("counters: %d allowed, %d denied, %d bytes in", f.sb.Allowed.Load(), f.sb.Denied.Load(), f.sb.BytesIn.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reports) != 4 || !slices.Contains(f.reports, "denied 127.0.0.1") {
		t.Errorf("reports %v", f.reports)
	}
}

// TestConnectionCap: a sandbox holds at most MaxConns connections to its
// proxy at once. Idle ones it forgot do not keep it from connecting: a new
// connection closes the oldest idle one. Only when every connection
// carries a tunnel is a new one closed as it comes, and a place frees
// when a tunnel ends.
func TestConnectionCap(t *testing.T) {
	loop := &Config{MaxConns: 4, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	f := newFixture(t, loop, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"127.0.0.0/8"}})
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", f.proxy.Host)
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
	// Twelve idle connections: the oldest eight close, one for each
	// newer one over the cap.
	var idle []net.Conn
	for range 12 {
		idle = append(idle, dial())
	}
	for i, c := range idle[:8] {
		if !closedWithin(c, 5*time.Second) {
			t.Fatalf("idle connection %d of 12 is open; want the oldest 8 closed", i)
		}
	}
	for i, c := range idle[8:] {
		if closedWithin(c, 100*time.Millisecond) {
			t.Fatalf("idle connection %d of 12 closed; want the newest 4 open", 8+i)
		}
	}
	// A request goes through all the same, on a connection the proxy
	// closes after it: the proxy gives its place back before the client
	// sees it end, so the count below is exact.
	c := dial()
	fmt.Fprintf(c, "GET http://%s/ok HTTP/1.1\r\nHost: %[1]s\r\nConnection: close\r\n\r\n", port(f.target))
	if answer, err := io.ReadAll(c); err != nil || !strings.HasPrefix(string(answer), "HTTP/1.1 200") {
		t.Fatalf("a request with the cap full of idle connections: %q, %v", answer, err)
	}
	// Four tunnels: every connection busy, so the next is refused.
	var tunnels []net.Conn
	for range 4 {
		c := dial()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", port(f.target))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v, %v", resp, err)
		}
		tunnels = append(tunnels, c)
	}
	if over := dial(); !closedWithin(over, 5*time.Second) {
		t.Fatal("a connection over a cap of tunnels was kept")
	}
	tunnels[0].Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if code, _ := f.get(t, "http://"+port(f.target)+"/", false); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no request was answered after a tunnel closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBytesCounted: the bytes each way are counted exactly, by plain HTTP
// (whose body of known length the proxy copies socket to socket) and by
// CONNECT (whose first bytes may come with the CONNECT request itself).
func TestBytesCounted(t *testing.T) {
	const body = 1<<20 + 17
	answer := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", body, strings.Repeat("x", body))
	// The origin reads a request's head, answers, and counts what it read
	// until the other side closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	received := make(chan int64, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var head []byte
			buf := make([]byte, 4096)
			for !strings.Contains(string(head), "\r\n\r\n") {
				n, err := c.Read(buf)
				head = append(head, buf[:n]...)
				if err != nil {
					break
				}
			}
			io.WriteString(c, answer)
			c.(*net.TCPConn).CloseWrite()
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			received <- int64(len(head)) + n
		}
	}()
	origin := ln.Addr().String()
	loop := &Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, connect := range []bool{false, true} {
		f := newFixture(t, loop, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"127.0.0.0/8"}})
		c, err := net.Dial("tcp", f.proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		req := "GET http://" + origin + "/ HTTP/1.1\r\nHost: " + origin + "\r\n\r\n"
		if connect {
			req = "CONNECT " + origin + " HTTP/1.1\r\nHost: " + origin + "\r\n\r\n" + "GET / HTTP/1.1\r\nHost: " + origin + "\r\n\r\n"
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if connect {
			if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v, %v", resp, err)
			}
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || len(got) != body {
			t.Fatalf("connect %v: %d bytes of %d, %v", connect, len(got), body, err)
		}
		c.Close()
		out := <-received
		for deadline := time.Now().Add(5 * time.Second); f.sb.Allowed.Load() < 1 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if in := f.sb.BytesIn.Load(); in != int64(len(answer)) || f.sb.BytesOut.Load() != out {
			t.Errorf("connect %v: counted %d bytes in, %d out; want %d, %d", connect, in, f.sb.BytesOut.Load(), len(answer), out)
		}
	}
}
