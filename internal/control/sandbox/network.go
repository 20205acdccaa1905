package sandbox

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// egressConn is a running sandbox's egress proxy.
type egressConn struct {
	proxy netpolicy.Proxy
	tally *egressTally // counts its decisions into events
}

// startEgress starts a running sandbox's egress proxy (drivers whose
// sandboxes reach out only through the control plane); letting go of the
// sandbox stops it.
func (s *Service) startEgress(ctx context.Context, lv *live, rec *store.Sandbox, d driver.Driver, h driver.Handle) {
	eg, ok := d.(driver.Egresser)
	if !ok {
		return
	}
	pol, err := netpolicy.Parse(rec.Network)
	if err != nil {
		s.log.Error("stored network policy", logattr.Sandbox(rec.ID), "err", err)
		pol, _ = netpolicy.Parse(api.NetworkPolicy{Egress: api.EgressNone})
	}
	ln, err := eg.ListenEgress(ctx, h)
	if err != nil {
		s.log.Error("egress listener", logattr.Sandbox(rec.ID), "err", err)
		return
	}
	// Decisions are counted into events, not recorded one by one.
	tally := s.newEgressTally(rec)
	c := &egressConn{proxy: s.cfg.Egress.Serve(rec.ID, ln, pol, tally.add), tally: tally}
	lv.mu.Lock()
	old := lv.egress
	lv.egress = c
	lv.mu.Unlock()
	if old != nil {
		old.close()
	}
}

// close stops accepting connections and records what was counted.
func (c *egressConn) close() {
	c.proxy.Close()
	c.tally.close()
}

// egressOf is sandbox id's egress proxy, or nil.
func (s *Service) egressOf(id string) *egressConn {
	lv := s.lookup(id)
	if lv == nil {
		return nil
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return lv.egress
}

// Network returns a sandbox's egress policy and its counters since it
// last started.
func (s *Service) Network(ctx context.Context, id string) (api.Network, error) {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Network{}, err
	}
	return s.network(rec), nil
}

func (s *Service) network(rec *store.Sandbox) api.Network {
	n := api.Network{Policy: rec.Network}
	if c := s.egressOf(rec.ID); c != nil {
		k := c.proxy.Counts()
		n.Allowed, n.Denied, n.BytesOut, n.BytesIn = k.Allowed, k.Denied, k.BytesOut, k.BytesIn
	}
	return n
}

// confinesEgress refuses a policy other than public egress for a driver
// whose sandboxes reach the network directly (Capabilities says
// UnconfinedEgress: the kubernetes driver's Pods): nothing would hold
// them to it.
func confinesEgress(d driver.Driver, p api.NetworkPolicy) error {
	if !d.Capabilities().UnconfinedEgress || p.Egress == api.EgressPublic {
		return nil
	}
	return errdefs.Invalid("network_policy_unsupported",
		"the %s driver's sandboxes do not reach out through hutch's egress proxy, so egress %q cannot be enforced; leave the network policy public", d.Name(), p.Egress)
}

// SetNetwork changes a sandbox's egress policy; the next connection sees
// it, and a stopped sandbox starts with it.
func (s *Service) SetNetwork(ctx context.Context, id string, p api.NetworkPolicy) (api.Network, error) {
	pol, err := netpolicy.Parse(p)
	if err != nil {
		return api.Network{}, err
	}
	p.Egress = pol.Mode
	rec, err := s.store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		if err := require(OpNetwork, sb); err != nil {
			return err
		}
		if d, ok := s.drivers.Get(sb.Driver); ok {
			if err := confinesEgress(d, p); err != nil {
				return err
			}
		}
		sb.Network = p
		return nil
	})
	rec, err = s.updated(id, rec, err)
	if err != nil {
		return api.Network{}, err
	}
	if c := s.egressOf(id); c != nil {
		c.proxy.SetPolicy(pol)
	}
	s.emit(ctx, rec, api.EventNetworkChanged, "egress policy changed to "+p.Egress, map[string]any{"egress": p.Egress, "allow": p.Allow})
	return s.network(rec), nil
}

// The codes of DialTunnel's errors a preview tells apart.
const (
	CodePortClosed          = agentclient.CodePortClosed          // nothing listens on the port
	CodePreviewsUnsupported = agentclient.CodePreviewsUnsupported // the sandbox's agent opens no tunnels
	CodeTooManyTunnels      = agentclient.CodeTooManyTunnels      // the agent's tunnel limit is reached
)

// DialTunnel opens a connection to port inside a running sandbox, for a
// preview. The router calls it as the system, after its own
// authorization; the dial passes the door, the connection's life does
// not count as a call in flight (the router pools idle tunnels), but the
// bytes through it count as activity (idle.go), at most once a second.
func (s *Service) DialTunnel(ctx context.Context, id string, port int) (net.Conn, error) {
	conn, err := unary(tenancy.System(ctx), s, id, "tunnel", func(ctx context.Context, a *agentclient.Client) (net.Conn, error) {
		return a.Tunnel(ctx, port)
	})
	if err != nil {
		return nil, err
	}
	lv := s.lookup(id)
	if lv == nil {
		conn.Close()
		return nil, errdefs.Conflict("sandbox_not_running", "sandbox %s stopped running while its tunnel opened", id)
	}
	c := &activeConn{Conn: conn, lv: lv}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if lv.client == nil { // paused or stopped meanwhile
		conn.Close()
		return nil, errdefs.Conflict("sandbox_not_running", "sandbox %s stopped running while its tunnel opened", id)
	}
	lv.tunnels[c] = true
	return c, nil
}

// activeConn is a tunnel whose traffic is the sandbox's activity: a
// preview served over a pooled tunnel or a WebSocket makes no new call
// through the door. The service keeps each open one, so that letting go
// of a sandbox's agent (a pause, a stop) closes them: the router's next
// request dials again, through the door, which resumes a paused sandbox,
// instead of waiting on a frozen program over a pooled tunnel.
type activeConn struct {
	net.Conn
	lv   *live
	last atomic.Int64 // unix nanoseconds of the last activity noted
}

// Close closes the tunnel and forgets it.
func (c *activeConn) Close() error {
	c.lv.mu.Lock()
	delete(c.lv.tunnels, c)
	c.lv.mu.Unlock()
	return c.Conn.Close()
}

func (c *activeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.note()
	}
	return n, err
}

func (c *activeConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.note()
	}
	return n, err
}

// note records activity, once a second at most.
func (c *activeConn) note() {
	now := time.Now()
	if now.UnixNano()-c.last.Load() < int64(time.Second) {
		return
	}
	c.last.Store(now.UnixNano())
	c.lv.touch(now)
}

// Listener is a TCP port listening in a sandbox and the addresses it
// listens on ("127.0.0.1", "::1", "0.0.0.0", "::"), IPv4 first.
type Listener struct {
	Port      int
	Addresses []string
}

// ListeningPorts lists the TCP ports listening in a running sandbox, by
// port, as its agent reads them (the egress forwarder left out). A
// sandbox that is not running is 409 sandbox_not_running; an agent too
// old to list them 501 agent_too_old; a sandbox without a network of its
// own (the process driver) 501 previews_unsupported.
func (s *Service) ListeningPorts(ctx context.Context, id string) ([]Listener, error) {
	return unary(ctx, s, id, "ports", func(ctx context.Context, a *agentclient.Client) ([]Listener, error) {
		socks, err := a.ListeningPorts(ctx)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(socks, func(x, y agentclient.ListeningSocket) int { return x.Port - y.Port })
		var out []Listener
		for _, ls := range socks {
			if n := len(out); n > 0 && out[n-1].Port == ls.Port {
				if !slices.Contains(out[n-1].Addresses, ls.Address) {
					out[n-1].Addresses = append(out[n-1].Addresses, ls.Address)
				}
				continue
			}
			out = append(out, Listener{Port: ls.Port, Addresses: []string{ls.Address}})
		}
		return out, nil
	})
}

// closeEgress stops every egress proxy (the server is going down; the
// sandboxes' forwarders reconnect to the next server's).
func (s *Service) closeEgress() {
	for _, lv := range s.liveList() {
		lv.mu.Lock()
		c := lv.egress
		lv.egress = nil
		lv.mu.Unlock()
		if c != nil {
			c.close()
		}
	}
}
