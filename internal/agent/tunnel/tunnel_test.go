package tunnel_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/tunnel"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// tunnelFixture is an agent that serves tunnels although it runs in the
// host's network namespace.
func tunnelFixture(t *testing.T, slots int) *agenttest.Fixture {
	t.Helper()
	restore := tunnel.SetNetCheck(func() error { return nil }, slots)
	f := agenttest.New(t, nil)
	restore()
	return f
}

// echoBackend listens on 127.0.0.1: each connection gets back what it
// sends, and "bye" once it has shut its side, then the backend closes.
func echoBackend(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.Write([]byte("bye"))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// closedPort is a port nothing listens on at 127.0.0.1 nor at [::1].
func closedPort(t *testing.T) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
		ln.Close()
		if err == nil {
			ln6.Close()
			return port
		}
		if !hasIPv6Loopback() {
			return port
		}
		// Taken at [::1]: try another.
	}
}

// hasIPv6Loopback reports whether this host's loopback has ::1.
func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// serveOn listens at addr on network and answers each connection with
// reply, then closes it.
func serveOn(t *testing.T, network, addr, reply string) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(reply))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}

// readTunnel opens a tunnel to port and reads what the backend sends
// before it closes.
func readTunnel(t *testing.T, f *agenttest.Fixture, port int) string {
	t.Helper()
	conn, err := f.Client.Tunnel(context.Background(), port)
	if err != nil {
		t.Fatalf("tunnel to %d: %v", port, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("tunnel to %d: %v", port, err)
	}
	return string(b)
}

// TestTunnelOtherLoopback: a server elsewhere on loopback (127.0.1.1,
// the sandbox's hostname, say) is found in the socket table and reached.
func TestTunnelOtherLoopback(t *testing.T) {
	f := tunnelFixture(t, 0)
	other := serveOn(t, "tcp4", "127.0.0.2:"+strconv.Itoa(closedPort(t)), "from 127.0.0.2")
	if got := readTunnel(t, f, other.Port); got != "from 127.0.0.2" {
		t.Fatalf("the server on 127.0.0.2:%d: %q", other.Port, got)
	}
}

// TestTunnelLoopbackV6: a server bound to ::1 only (what listen(port,
// "localhost") does where localhost is ::1 first) is reached, and a port
// served at both 127.0.0.1 and ::1 is reached at 127.0.0.1, tried first.
func TestTunnelLoopbackV6(t *testing.T) {
	if !hasIPv6Loopback() {
		t.Skip("this host's loopback has no ::1")
	}
	f := tunnelFixture(t, 0)
	if !f.Client.Has(agentproto.FeatureLoopbackV6) {
		t.Fatalf("the agent does not report %s", agentproto.FeatureLoopbackV6)
	}
	v6 := serveOn(t, "tcp6", net.JoinHostPort("::1", strconv.Itoa(closedPort(t))), "from ::1")
	if got := readTunnel(t, f, v6.Port); got != "from ::1" {
		t.Fatalf("the server on [::1]:%d: %q", v6.Port, got)
	}

	both := serveOn(t, "tcp4", "127.0.0.1:"+strconv.Itoa(closedPort(t)), "from 127.0.0.1")
	serveOn(t, "tcp6", net.JoinHostPort("::1", strconv.Itoa(both.Port)), "from ::1")
	if got := readTunnel(t, f, both.Port); got != "from 127.0.0.1" {
		t.Fatalf("port %d at both addresses: %q, want 127.0.0.1's", both.Port, got)
	}
}

// copyingClient is a client of f's agent that does not ask for the
// tunnel's socket, so the agent copies the tunnel's bytes.
func copyingClient(t *testing.T, f *agenttest.Fixture) *agentclient.Client {
	info := agentproto.Current()
	info.Features = slices.DeleteFunc(info.Features, func(s string) bool { return s == agentproto.FeatureTunnelFD })
	c := agentclient.New("unix", f.Sock, agenttest.Token, agentclient.Speaking(info))
	t.Cleanup(c.Close)
	return c
}

// TestTunnel: a tunnel carries bytes both ways and a half-close, whether
// the agent hands over the socket it dialled (the connection is then
// that TCP socket) or copies.
func TestTunnel(t *testing.T) {
	f := tunnelFixture(t, 0)
	t.Run("passed", func(t *testing.T) {
		conn := testTunnel(t, f.Client)
		if _, ok := conn.(*net.TCPConn); !ok {
			t.Errorf("the passed tunnel is a %T, not the socket itself", conn)
		}
	})
	t.Run("copied", func(t *testing.T) {
		if _, ok := testTunnel(t, copyingClient(t, f)).(*net.TCPConn); ok {
			t.Error("a copied tunnel is a TCP socket")
		}
	})
}

func testTunnel(t *testing.T, c *agentclient.Client) net.Conn {
	port := echoBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := c.Tunnel(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cancel() // the context bounds the handshake only
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("echo %q, %v", buf, err)
	}
	// A half-close reaches the backend, which still answers.
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(conn)
	if err != nil || string(rest) != "bye" {
		t.Fatalf("after CloseWrite: %q, %v", rest, err)
	}
	return conn
}

func TestTunnelRefusals(t *testing.T) {
	f := tunnelFixture(t, 0)
	ctx := context.Background()

	closed := closedPort(t)
	_, err := f.Client.Tunnel(ctx, closed)
	agenttest.WantErr(t, "closed port", err, errdefs.ErrUnavailable, agentclient.CodePortClosed)
	if !agentclient.IsPortClosed(err) {
		t.Errorf("IsPortClosed(%v) = false", err)
	}
	// The message names every address tried.
	var e *errdefs.Error
	if p := strconv.Itoa(closed); errors.As(err, &e) && (!strings.Contains(e.Message, "127.0.0.1:"+p) || !strings.Contains(e.Message, "[::1]:"+p)) {
		t.Errorf("closed port: message %q does not name 127.0.0.1:%s and [::1]:%s", e.Message, p, p)
	}
	_, err = f.Client.Tunnel(ctx, 0)
	agenttest.WantErr(t, "port 0", err, errdefs.ErrInvalid, "invalid_port")
	// The egress forwarder's port is the sandbox's way out, never an app.
	_, err = f.Client.Tunnel(ctx, 3128)
	agenttest.WantErr(t, "the egress port", err, errdefs.ErrForbidden, "port_reserved")

	// What the client would not send, the agent refuses too.
	hc := f.RawClient()
	port := strconv.Itoa(echoBackend(t))
	for _, tt := range []struct {
		name, path string
		upgrade    bool
		status     int
		code       string
	}{
		{"port 0", "/tunnel/0", true, http.StatusBadRequest, "invalid_port"},
		{"port 65536", "/tunnel/65536", true, http.StatusBadRequest, "invalid_port"},
		{"leading zero", "/tunnel/0" + port, true, http.StatusBadRequest, "invalid_port"},
		{"not a number", "/tunnel/http", true, http.StatusBadRequest, "invalid_port"},
		{"no upgrade", "/tunnel/" + port, false, http.StatusBadRequest, "upgrade_required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://agent"+tt.path, nil)
			nonce := agentproto.NewNonce()
			agenttest.Sign(req, agenttest.Token, nonce, "GET", tt.path, "", agentproto.EmptyBody)
			if tt.upgrade {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", agentclient.TunnelProtocol)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get(agentproto.HeaderProof) != agentproto.Proof(agenttest.Token, nonce) {
				t.Fatalf("status %d, proof %q", resp.StatusCode, resp.Header.Get(agentproto.HeaderProof))
			}
		})
	}

	// An unsigned upgrade is refused before anything is dialled.
	req, _ := http.NewRequest("GET", "http://agent/tunnel/"+port, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", agentclient.TunnelProtocol)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned tunnel: status %d", resp.StatusCode)
	}
}

// TestTunnelLimit: past its slots the agent answers 503, and a closed
// tunnel frees its slot. The limit is on the tunnels the agent copies; a
// passed socket is no longer the agent's.
func TestTunnelLimit(t *testing.T) {
	f := tunnelFixture(t, 2)
	f.Client = copyingClient(t, f)
	port := echoBackend(t)
	ctx := context.Background()
	var open []net.Conn
	for range 2 {
		c, err := f.Client.Tunnel(ctx, port)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	_, err := f.Client.Tunnel(ctx, port)
	agenttest.WantErr(t, "third tunnel", err, errdefs.ErrUnavailable, agentclient.CodeTooManyTunnels)
	open[0].Close()
	open[1].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := f.Client.Tunnel(ctx, port)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots not freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTunnelOutsideSandbox: an agent that is not the init of a network
// namespace of its own (the process driver; this test) opens no tunnels,
// since 127.0.0.1 would be the host's.
func TestTunnelOutsideSandbox(t *testing.T) {
	if err := tunnel.OwnLoopback(); err == nil {
		t.Skip("this test runs as pid 1 of a namespace with loopback only")
	}
	f := agenttest.New(t, nil)
	_, err := f.Client.Tunnel(context.Background(), echoBackend(t))
	agenttest.WantErr(t, "tunnel", err, errdefs.ErrUnsupported, agentclient.CodePreviewsUnsupported)
	if !agentclient.IsPreviewsUnsupported(err) {
		t.Errorf("IsPreviewsUnsupported(%v) = false", err)
	}
}

// TestTunnelImpostor: a 101 without the agent's proof is refused.
func TestTunnelImpostor(t *testing.T) {
	dir, err := os.MkdirTemp("", "hutch-tunnel-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: hutch-tunnel\r\n\r\n")
				io.Copy(io.Discard, c)
			}()
		}
	}()
	c := agentclient.New("unix", sock, agenttest.Token)
	defer c.Close()
	_, err = c.Tunnel(context.Background(), 80)
	agenttest.WantErr(t, "tunnel", err, errdefs.ErrUnavailable, "agent_unverified")

	// A context that ends mid-handshake ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	silent, err := net.Listen("unix", filepath.Join(dir, "silent"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		c, err := silent.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c2 := agentclient.New("unix", filepath.Join(dir, "silent"), agenttest.Token)
	defer c2.Close()
	if _, err := c2.Tunnel(ctx, 80); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent agent: %v, want the context's error", err)
	}
}
