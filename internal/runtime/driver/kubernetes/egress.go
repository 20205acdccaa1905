package kubernetes

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// A sandbox's Pod has no way out of its own: its NetworkPolicy allows it
// no egress at all, and its HTTP_PROXY and HTTPS_PROXY point at its
// agent's egress forwarder on its own loopback (agentproto.EgressAddr).
// The agent carries each connection there over a request the control
// plane keeps open on the agent's API (GET /egress, an upgrade), which the
// control plane opens as it opens every call: by dialling the Pod. So the
// sandbox needs no route to the control plane, the proxy and its policy
// are on whichever node looks after the sandbox now (one that took it
// over opens its own), and nothing but the sandbox's own agent, proving
// itself with the sandbox's token, can speak for it.

var _ driver.Egresser = (*Driver)(nil)

// egressStreams is how many egress requests the control plane keeps
// waiting on each agent: a burst of the sandbox's connections beyond it
// waits a round trip per connection for the next. Each is an idle
// connection and a goroutine on both sides for as long as the sandbox
// runs, so it is kept small.
const egressStreams = 2

// ListenEgress returns the sandbox's egress connections as its agent
// hands them over, until the listener is closed.
func (d *Driver) ListenEgress(_ context.Context, h driver.Handle) (net.Listener, error) {
	st, err := decodeState(h)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &streamListener{
		c:      agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info)),
		addr:   streamAddr(st.Pod),
		ctx:    ctx,
		cancel: cancel,
		conns:  make(chan net.Conn),
	}
	for range egressStreams {
		l.wg.Go(l.keep)
	}
	return l, nil
}

// streamListener is a net.Listener of the connections a sandbox's agent
// hands over on egress streams. Its goroutines end with Close.
type streamListener struct {
	c      *agentclient.Client
	addr   net.Addr
	ctx    context.Context
	cancel context.CancelFunc
	conns  chan net.Conn
	wg     sync.WaitGroup
	once   sync.Once
}

// keep keeps one egress stream waiting on the agent until the listener
// closes, and hands each connection it carries to Accept. An agent that
// cannot be reached is asked again after a pause that grows to 5 s.
func (l *streamListener) keep() {
	pause := 100 * time.Millisecond
	for l.ctx.Err() == nil {
		conn, err := l.c.AcceptEgress(l.ctx)
		if err != nil {
			select {
			case <-time.After(pause):
			case <-l.ctx.Done():
			}
			pause = min(2*pause, 5*time.Second)
			continue
		}
		pause = 100 * time.Millisecond
		select {
		case l.conns <- conn:
		case <-l.ctx.Done():
			conn.Close()
		}
	}
}

// Accept returns the next connection of the sandbox.
func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close ends every waiting stream and waits for their goroutines.
func (l *streamListener) Close() error {
	l.once.Do(func() {
		l.cancel()
		l.wg.Wait()
		l.c.Close()
	})
	return nil
}

// Addr names the sandbox's Pod.
func (l *streamListener) Addr() net.Addr { return l.addr }

// streamAddr is the address of a Pod's egress streams.
type streamAddr string

func (a streamAddr) Network() string { return "hutch-egress" }
func (a streamAddr) String() string  { return string(a) }
