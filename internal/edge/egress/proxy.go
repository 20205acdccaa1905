// Package egress is the control plane's side of a sandbox's way out: an
// HTTP proxy (CONNECT and plain HTTP) that the sandbox's agent forwards its
// 127.0.0.1:3128 to, one listener per sandbox, enforcing that sandbox's
// policy (internal/control/netpolicy) on the address the proxy itself
// resolved and dials, so DNS rebinding cannot get around it; every
// decision is reported. Requests to the proxy itself reach the provider
// gateway.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/base/connlimit"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
)

// Config is the operator's side of every sandbox's egress.
type Config struct {
	// Local serves the requests addressed to a sandbox's proxy itself
	// (origin form, not CONNECT) under LocalPrefix: the provider gateway,
	// as it meets that sandbox. Nil serves none.
	Local       func(sandboxID string) http.Handler
	LocalPrefix string
	// AllowPrivate are private ranges sandboxes may reach, when their
	// policy is an allowlist that names the destination too.
	AllowPrivate []netip.Prefix
	// Lookup resolves a host name; nil uses the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds one connection attempt; zero means 10 s.
	DialTimeout time.Duration
	// MaxConns bounds the connections one sandbox holds open to its proxy
	// (idle ones and tunnels alike); zero means DefaultMaxConns.
	MaxConns int
	// Observer is told of every connection of every sandbox (observe.go);
	// nil observes nothing.
	Observer Observer
	Log      *slog.Logger
}

// DefaultMaxConns is Config.MaxConns when it is zero.
const DefaultMaxConns = 512

// Sandbox is one sandbox's proxy: its policy, changeable at any time (the
// next connection sees the new one), and its counters.
type Sandbox struct {
	ID     string
	cfg    *Config
	own    map[netip.Addr]bool
	policy atomic.Pointer[netpolicy.Policy]
	report netpolicy.Report
	ln     net.Listener // while served by Proxies

	Allowed, Denied, BytesOut, BytesIn atomic.Int64

	// Local serves the requests addressed to the proxy itself (origin
	// form, not CONNECT) under LocalPrefix: the provider gateway. Set it
	// before Serve.
	Local       http.Handler
	LocalPrefix string
}

// NewSandbox returns the proxy of one sandbox.
func NewSandbox(id string, cfg *Config, p netpolicy.Policy, report netpolicy.Report) *Sandbox {
	s := &Sandbox{ID: id, cfg: cfg, own: ownAddrs(), report: report}
	s.policy.Store(&p)
	return s
}

// SetPolicy replaces the policy for the connections that follow.
func (s *Sandbox) SetPolicy(p netpolicy.Policy) { s.policy.Store(&p) }

// Policy is the policy now.
func (s *Sandbox) Policy() netpolicy.Policy { return *s.policy.Load() }

// Counts are the decisions and bytes so far.
func (s *Sandbox) Counts() netpolicy.Counts {
	return netpolicy.Counts{Allowed: s.Allowed.Load(), Denied: s.Denied.Load(), BytesOut: s.BytesOut.Load(), BytesIn: s.BytesIn.Load()}
}

// Close stops the proxy Proxies serves from accepting connections.
func (s *Sandbox) Close() error {
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// ownAddrs are the host's own addresses (the control plane's).
func ownAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out
}

// ServeHTTP is the proxy: CONNECT host:port, or a plain HTTP request in
// absolute form; or, for requests to the proxy itself, Local.
func (s *Sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	if s.Local != nil && !r.URL.IsAbs() && strings.HasPrefix(r.URL.Path, s.LocalPrefix) {
		s.Local.ServeHTTP(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "hutch egress proxy: send absolute http:// URLs, or CONNECT for anything else", http.StatusBadRequest)
		return
	}
	s.forward(w, r)
}

// dial connects to host:port under the policy: the name is checked, then
// every address it resolves to, and the connection goes to the first
// address allowed, by address, so what was checked is what is dialled.
func (s *Sandbox) dial(ctx context.Context, host string, port uint16) (net.Conn, netpolicy.Decision, error) {
	p := s.Policy()
	named := p.AllowName(host, port)
	if !named.Allowed {
		return nil, named, nil
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		lookup := s.cfg.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		var err error
		if addrs, err = lookup(ctx, host); err != nil || len(addrs) == 0 {
			return nil, netpolicy.Decision{Reason: fmt.Sprintf("%s does not resolve", host)}, nil
		}
	}
	explicit := p.Mode == "allowlist"
	d := netpolicy.Decision{}
	for _, ip := range addrs {
		// What is checked is what is dialled: the canonical address.
		ip = netpolicy.Canonical(ip)
		if d = p.AllowAddr(ip, explicit, s.cfg.AllowPrivate, s.own); !d.Allowed {
			continue
		}
		timeout := s.cfg.DialTimeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		dialer := &net.Dialer{Timeout: timeout, ControlContext: s.checkDialled(p, explicit)}
		c, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, port).String())
		return c, d, err
	}
	return nil, d, nil
}

// checkDialled checks once more, as the socket connects, the address the
// kernel is given: whatever a resolver or a parser did, no connection
// reaches an address the policy refuses.
func (s *Sandbox) checkDialled(p netpolicy.Policy, named bool) func(context.Context, string, string, syscall.RawConn) error {
	return func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("egress: dialling %q, not an address", address)
		}
		if d := p.AllowAddr(ap.Addr(), named, s.cfg.AllowPrivate, s.own); !d.Allowed || ap.Addr().Zone() != "" {
			return fmt.Errorf("egress: refused at connect: %s", d.Reason)
		}
		return nil
	}
}

// deny records a verdict that ends the request here: Denied by the
// policy (VerdictDenied), or failed to connect (VerdictFailed).
func (s *Sandbox) deny(host string, port uint16, d netpolicy.Decision, verdict string) {
	s.Denied.Add(1)
	if s.report != nil {
		s.report(host, port, d, 0, 0)
	}
	s.observe(verdict, 0, 0)
}

func (s *Sandbox) done(host string, port uint16, d netpolicy.Decision, out, in int64) {
	s.Allowed.Add(1)
	s.BytesOut.Add(out)
	s.BytesIn.Add(in)
	if s.report != nil {
		s.report(host, port, d, out, in)
	}
	s.observe(VerdictAllowed, out, in)
}

func splitHostPort(hostport string, defPort uint16) (string, uint16, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == 0 {
			return "", 0, err
		}
		return hostport, defPort, nil
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("bad port %q", portStr)
	}
	return host, uint16(port), nil
}

// connect serves CONNECT: a tunnel to host:port once the policy allows it.
func (s *Sandbox) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 0)
	if err != nil {
		http.Error(w, "hutch egress proxy: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	up, d, err := s.dial(r.Context(), host, port)
	if up == nil {
		s.refuse(w, host, port, d, err)
		return
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "hutch egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// Bytes the client sent after its CONNECT request, already buffered.
	var early int64
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		m, _ := up.Write(b)
		early = int64(m)
	}
	out, in := splice(down, up)
	s.done(host, port, d, out+early, in)
}

// refuse answers a refused or failed destination.
func (s *Sandbox) refuse(w http.ResponseWriter, host string, port uint16, d netpolicy.Decision, dialErr error) {
	if dialErr != nil {
		s.deny(host, port, netpolicy.Decision{Reason: "connection failed: " + dialErr.Error()}, VerdictFailed)
		http.Error(w, "hutch egress proxy: could not connect to "+net.JoinHostPort(host, strconv.Itoa(int(port))), http.StatusBadGateway)
		return
	}
	s.deny(host, port, d, VerdictDenied)
	w.Header().Set("X-Hutch-Egress", "denied")
	http.Error(w, "hutch egress proxy: denied: "+d.Reason, http.StatusForbidden)
}

// splice copies both ways until both are done and returns the bytes
// each way (client → upstream, upstream → client).
func splice(down, up net.Conn) (out, in int64) {
	var wg sync.WaitGroup
	wg.Go(func() {
		out, _ = io.Copy(up, down)
		closeWrite(up)
	})
	in, _ = io.Copy(down, up)
	closeWrite(down)
	wg.Wait()
	return out, in
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = c.Close()
	}
}

// hopHeaders are dropped on the way through (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward serves a plain HTTP request through the policy, over a
// connection of its own to the destination. Redirects are the client's to
// follow, each through the proxy and its policy again.
func (s *Sandbox) forward(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "hutch egress proxy: bad host", http.StatusBadRequest)
		return
	}
	c, decision, err := s.dial(r.Context(), host, port)
	if c == nil {
		s.refuse(w, host, port, decision, err)
		return
	}
	stop := context.AfterFunc(r.Context(), func() { c.Close() })
	defer stop()
	up := &countingConn{Conn: c}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Close = true
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	// The request goes out while the answer is read, as a transport does,
	// so an answer that comes before the whole body is read still comes.
	// Its body is the client's, which may never end: nothing waits for
	// the writer but the count of a write in flight.
	go func() { _ = out.Write(up) }()
	br := bufio.NewReader(up)
	resp, err := readResponse(br, out)
	var in int64
	if err == nil {
		in = relay(w, resp, br, c)
	}
	// Closed first, so a write the destination never read ends rather
	// than holding Written.
	c.Close()
	if err != nil {
		s.refuse(w, host, port, decision, err)
		return
	}
	s.done(host, port, decision, up.Written(), up.read.Load()+in)
}

// relay answers the client with resp, read from c through br, and returns
// the bytes it read from c itself, past br.
func relay(w http.ResponseWriter, resp *http.Response, br *bufio.Reader, c net.Conn) int64 {
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	switch {
	case resp.ContentLength > 0 && resp.Body != http.NoBody && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		// A body of known length: what came with the head, then the rest
		// straight from the socket, so that between two sockets the
		// kernel moves it (splice) and no buffer of the proxy's does.
		head, _ := br.Peek(int(min(int64(br.Buffered()), resp.ContentLength)))
		if _, err := w.Write(head); err != nil {
			return 0
		}
		rest := &io.LimitedReader{R: c, N: resp.ContentLength - int64(len(head))}
		_, _ = io.Copy(w, rest)
		return resp.ContentLength - int64(len(head)) - rest.N
	case resp.ContentLength >= 0:
		_, _ = io.Copy(w, resp.Body)
	default:
		_, _ = io.Copy(flushWriter{w}, resp.Body)
	}
	return 0
}

// max1xx bounds the informational answers skipped before the final one.
const max1xx = 5

// readResponse reads the destination's answer to req, past any
// informational (1xx) answers, which the client does not see.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for range max1xx {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
	return nil, errors.New("too many informational answers")
}

// countingConn counts what goes through a connection. The request is
// written from a goroutine of its own, which may still be between its
// write and its count when the answer has been read: a write holds mu
// until it is counted, so Written waits for one in flight.
type countingConn struct {
	net.Conn
	read    atomic.Int64
	mu      sync.Mutex
	written int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.written += int64(n)
	return n, err
}

// Written is what has been written, once a write in flight has returned.
func (c *countingConn) Written() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written
}

// flushWriter flushes after every write, so streamed responses (event
// streams, bodies of unknown length) stream.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	_ = http.NewResponseController(f.w).Flush()
	return n, err
}

// Serve answers the proxy protocol for sandbox s on l (its own listener,
// which is how the proxy knows the sandbox) until l is closed.
func Serve(l net.Listener, s *Sandbox) error {
	log := s.cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max := s.cfg.MaxConns
	if max == 0 {
		max = DefaultMaxConns
	}
	// Every connection of the listener is the sandbox's: the cap is its
	// whole budget. At the cap a new connection closes the sandbox's
	// oldest idle one, so idle ones it forgot cannot keep it from
	// connecting; only when every connection carries a request or a
	// tunnel is a new one refused. A connection that sends no request, or
	// sits idle between requests, is closed; a tunnel lives as long as it
	// is used. Nothing here authenticates (the listener is the sandbox's
	// own), so there is no shorter idle deadline for anonymous ones.
	cl := connlimit.New(l, connlimit.Config{PerClient: max, Log: log.With(logattr.Sandbox(s.ID))})
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: cl.ConnState, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	err := srv.Serve(cl)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Proxies serve every running sandbox's egress proxy under one Config:
// the sandbox service's netpolicy.Proxies.
type Proxies struct {
	Config *Config
}

var _ netpolicy.Proxies = (*Proxies)(nil)

// Serve serves sandbox id's proxy on ln, beside the caller, until the
// proxy is closed.
func (ps *Proxies) Serve(id string, ln net.Listener, p netpolicy.Policy, report netpolicy.Report) netpolicy.Proxy {
	s := NewSandbox(id, ps.Config, p, report)
	s.ln = ln
	if ps.Config.Local != nil {
		s.Local, s.LocalPrefix = ps.Config.Local(id), ps.Config.LocalPrefix
	}
	go func() {
		if err := Serve(ln, s); err != nil && ps.Config.Log != nil {
			ps.Config.Log.Warn("egress proxy", logattr.Sandbox(id), "err", err)
		}
	}()
	return s
}
