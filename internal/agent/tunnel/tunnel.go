// Package tunnel is the agent's side of the sandbox's network: tunnels to
// the sandbox's ports, which the control plane carries previews over
// (GET /tunnel/{port}), the TCP sockets listening in the sandbox
// (GET /ports), both served only where the loopback is the sandbox's own,
// and the egress forwarder, which carries every connection to the
// sandbox's proxy address to the control plane's egress proxy.
package tunnel

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Tunnels: GET /tunnel/{port} is an upgrade to the "hutch-tunnel" protocol.
// The agent dials {port} on the sandbox's own loopback: 127.0.0.1, then,
// when nothing answers there, [::1] (agentproto.FeatureLoopbackV6), then
// any other loopback address a socket listens at on that port. It answers
// 101 and then copies bytes both ways between the socket the request came
// on and that connection. The control plane's router carries previews over
// it. The port is in the path so that the request's MAC covers it.
const (
	// TunnelProtocol is the Upgrade token of a tunnel.
	TunnelProtocol = "hutch-tunnel"
	// MaxTunnels bounds the tunnels open at once; one more is refused with
	// 503 too_many_tunnels.
	MaxTunnels = 1024
	// tunnelDialTimeout bounds the dial to the sandbox's port.
	tunnelDialTimeout = 5 * time.Second
)

// Error codes of a refused tunnel, shared with internal/agent/agentclient.
const (
	codePortClosed          = "port_closed"
	codePreviewsUnsupported = "previews_unsupported"
	codeTooManyTunnels      = "too_many_tunnels"
)

// tunnelSlots is how many tunnels a Service opens at once (MaxTunnels;
// tests shrink it).
var tunnelSlots = MaxTunnels

// netCheck says whether the loopback is the sandbox's own: nil when it
// is, else why tunnels and the port list are refused. The real check runs
// once, when the first Service is made (New), before the agent confines
// itself; the network namespace of a process does not change after that.
// A variable so tests of the agent, which run in the host's network
// namespace, can stand in for a sandbox.
var netCheck = sync.OnceValue(ownLoopback)

// loopbacks are the addresses a tunnel dials, in order. 127.0.0.1 first:
// a server on 0.0.0.0, on 127.0.0.1 or on a dual-stack [::] (Node's and
// Python's default without a host) answers there at the first try, which
// keeps what worked before the fallback exactly as fast. [::1] second: a
// server that listened on "localhost", which the sandbox resolves to ::1
// first (Vite's default, Node's listen(port, "localhost")), is there and
// only there; it costs one refused connection on loopback, an answer the
// kernel gives at once without a packet leaving the namespace.
var loopbacks = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}

// ownLoopback returns nil when this agent is the init of a sandbox (pid 1)
// whose network namespace holds loopback interfaces only: then 127.0.0.1
// reaches nothing but the sandbox's own processes. Otherwise (the process
// driver shares the host's network stack, where 127.0.0.1 is the host's)
// it says why tunnels are refused.
func ownLoopback() error {
	if os.Getpid() != 1 {
		return errors.New("the agent is not the init of its own sandbox, so 127.0.0.1 may be the host's")
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return errors.New("the agent's network namespace has the non-loopback interface " + i.Name)
		}
	}
	return nil
}

// Config is what the tunnels and the port list need.
type Config struct {
	// OwnNetwork says the driver gave the sandbox a network namespace of
	// its own with interfaces beyond loopback (a Pod's): tunnels are
	// served without ownLoopback's check.
	OwnNetwork bool
	Log        *slog.Logger
}

// Service serves tunnels (GET /tunnel/{port}) and the listening ports
// (GET /ports).
type Service struct {
	log     *slog.Logger
	refused error         // why tunnels are refused; nil when they are served
	slots   chan struct{} // one per open tunnel
	dialer  net.Dialer
}

// New decides once, while the agent starts and before it confines
// itself, whether it serves tunnels.
func New(cfg Config) *Service {
	s := &Service{
		log:    cfg.Log,
		slots:  make(chan struct{}, tunnelSlots),
		dialer: net.Dialer{Timeout: tunnelDialTimeout},
	}
	if !cfg.OwnNetwork {
		s.refused = netCheck()
	}
	if s.refused != nil {
		s.log.Info("previews are off: the agent will not open tunnels", "reason", s.refused.Error())
	}
	return s
}

// Routes adds the tunnels' and the port list's routes to mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /tunnel/{port}", s.handleTunnel)
	mux.HandleFunc("GET /ports", s.handlePorts)
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, s.log, err)
}

func (s *Service) handleTunnel(w http.ResponseWriter, r *http.Request) {
	if s.refused != nil {
		s.writeError(w, r, errdefs.New(errdefs.ErrUnsupported, codePreviewsUnsupported,
			"this sandbox's driver does not give it a network of its own, so its ports cannot be previewed"))
		return
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != r.PathValue("port") {
		s.writeError(w, r, errdefs.Invalid("invalid_port", "%q is not a port from 1 to 65535", r.PathValue("port")))
		return
	}
	if strconv.Itoa(port) == egressPort() {
		// The egress forwarder is the sandbox's way out, not an app: a
		// preview of it would lend the sandbox's egress to anyone.
		s.writeError(w, r, errdefs.Forbidden("port_reserved", "port %d is the sandbox's egress proxy and cannot be previewed", port))
		return
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), TunnelProtocol) {
		s.writeError(w, r, errdefs.Invalid("upgrade_required", "a tunnel is an upgrade to %s", TunnelProtocol))
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.writeError(w, r, errdefs.Unavailable(codeTooManyTunnels, "the agent already has %d tunnels open", cap(s.slots)))
		return
	}
	defer func() { <-s.slots }()

	backend, tried, err := s.dial(r, port)
	if err != nil {
		s.refuseDial(w, r, port, tried, err)
		return
	}
	if r.URL.Query().Get("pass") == "fd" {
		s.passSocket(w, r, port, backend)
		return
	}
	defer backend.Close()

	conn, client, err := switchProtocols(w)
	if err != nil {
		s.log.Warn("tunnel: switch protocols", "port", port, "err", err)
		return
	}
	defer conn.Close()
	splice(conn, client, backend)
}

// switchProtocols answers 101, upgrading to TunnelProtocol, and returns
// the request's connection, the server's deadlines off it, and what to
// read the client from: the connection, after what the server read
// ahead of the client's request.
func switchProtocols(w http.ResponseWriter) (net.Conn, io.Reader, error) {
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Upgrade", TunnelProtocol)
	w.WriteHeader(http.StatusSwitchingProtocols)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	conn.SetDeadline(time.Time{})
	// The 101 is buffered until the hijack flushes it; anything the
	// client sent after its request is already in brw's reader.
	if err := brw.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if n := brw.Reader.Buffered(); n > 0 {
		return conn, io.MultiReader(io.LimitReader(brw.Reader, int64(n)), conn), nil
	}
	return conn, conn, nil
}

// dial connects to port on each of loopbacks in turn and, when nothing
// listens at either, on each other loopback address a socket listens at
// on that port (127.0.1.1, the sandbox's hostname; another of
// 127.0.0.0/8), as the sandbox's socket table shows it. It returns the
// first connection, or the addresses it tried and the last error. Only an
// address where nothing listens, or that the namespace lacks (a kernel
// without IPv6), passes to the next; any other failure (Landlock's
// refusal, a backlog so full the dial times out, the request gone) ends
// the dial there.
func (s *Service) dial(r *http.Request, port int) (net.Conn, []netip.AddrPort, error) {
	var tried []netip.AddrPort
	var err error
	addrs := loopbacks
	for i := 0; i < len(addrs); i++ {
		ap := netip.AddrPortFrom(addrs[i], uint16(port))
		tried = append(tried, ap)
		var c net.Conn
		if c, err = s.dialer.DialContext(r.Context(), "tcp", ap.String()); err == nil || !nothingThere(err) {
			return c, tried, err
		}
		if i == len(loopbacks)-1 {
			addrs = slices.Concat(loopbacks, otherLoopbacks(port))
		}
	}
	return nil, tried, err
}

// otherLoopbacks are the loopback addresses, other than loopbacks, that a
// socket listens at on port; none when the table cannot be read.
func otherLoopbacks(port int) []netip.Addr {
	socks, err := readListening()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ls := range socks {
		a, err := netip.ParseAddr(ls.Address)
		if err != nil || ls.Port != port || ls.Scope != ScopeLoopback {
			continue
		}
		a = a.Unmap()
		if !slices.Contains(loopbacks, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// nothingThere reports whether a dial failed because nothing listens at
// the address, or the address is not there to dial.
func nothingThere(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EAFNOSUPPORT)
}

// refuseDial answers a dial that failed: 502 port_closed when nothing
// listens at any address tried (the router shows its own page for that),
// 501 when the sandbox may not make TCP connections at all.
func (s *Service) refuseDial(w http.ResponseWriter, r *http.Request, port int, tried []netip.AddrPort, err error) {
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		s.writeError(w, r, errdefs.Wrap(errdefs.ErrUnsupported, codePreviewsUnsupported, err,
			"this sandbox may not open TCP connections, so its ports cannot be previewed"))
		return
	case r.Context().Err() != nil:
		return
	}
	s.log.Debug("tunnel: nothing answers", "port", port, "tried", tried, "err", err)
	httpio.WriteJSON(w, http.StatusBadGateway, agentproto.Error{Error: agentproto.ErrorBody{
		Code:    codePortClosed,
		Message: "nothing listens on port " + strconv.Itoa(port) + " in the sandbox (tried " + joinAddrs(tried) + ")",
	}})
}

// joinAddrs is "127.0.0.1:80 and [::1]:80".
func joinAddrs(as []netip.AddrPort) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// halfCloser is a connection whose sending side can be shut on its own.
type halfCloser interface {
	CloseWrite() error
}

// splice copies client → backend and backend → client at once. The end
// of one direction is passed on as a half-close, so a peer that shuts its
// side still reads the answer; an error in either direction, or both
// ending, closes everything (the caller's defers).
func splice(conn net.Conn, client io.Reader, backend net.Conn) {
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			conn.Close()
			backend.Close()
		})
	}
	done := make(chan struct{}, 2)
	pipe := func(dst net.Conn, src io.Reader) {
		defer func() { done <- struct{}{} }()
		if _, err := io.Copy(dst, src); err != nil {
			closeAll()
			return
		}
		if hc, ok := dst.(halfCloser); ok {
			if hc.CloseWrite() == nil {
				return
			}
		}
		closeAll()
	}
	go pipe(backend, client)
	go pipe(conn, backend)
	<-done
	<-done
	closeAll()
}

// headerHasToken reports whether a comma-separated header holds token,
// case-insensitively.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// egressPort is the port of the egress forwarder (agentproto.EgressAddr).
func egressPort() string {
	_, port, _ := net.SplitHostPort(agentproto.EgressAddr)
	return port
}
