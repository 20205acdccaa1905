package process

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

var _ driver.Egresser = (*Driver)(nil)

// A process sandbox shares the host's network, so its egress proxy is a
// port of its own on the host's loopback: Landlock lets the sandbox
// connect to that port and no other (where the kernel has Landlock's
// network rules), and the seccomp filter allows no UDP, so the proxy and
// its policy are the sandbox's only way out. The port is chosen at create
// and kept in the sandbox's state; its listener is held from then until
// the control plane takes it.

// heldListeners are egress listeners opened at create, by sandbox
// directory.
type heldListeners struct {
	mu sync.Mutex
	m  map[string]net.Listener
}

// openEgress opens the egress listener of the sandbox in dir on a free
// loopback port and holds it.
func (d *Driver) openEgress(dir string) (uint16, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("egress port: %w", err)
	}
	d.held.mu.Lock()
	defer d.held.mu.Unlock()
	if d.held.m == nil {
		d.held.m = map[string]net.Listener{}
	}
	if old := d.held.m[dir]; old != nil {
		old.Close()
	}
	d.held.m[dir] = ln
	return uint16(ln.Addr().(*net.TCPAddr).Port), nil
}

// dropEgress closes the held listener of the sandbox in dir, if any.
func (d *Driver) dropEgress(dir string) {
	d.held.mu.Lock()
	defer d.held.mu.Unlock()
	if ln := d.held.m[dir]; ln != nil {
		ln.Close()
		delete(d.held.m, dir)
	}
}

// ListenEgress hands over the listener held since create, or, after a
// stop or a restart of the control plane, listens on the sandbox's port
// again.
func (d *Driver) ListenEgress(ctx context.Context, h driver.Handle) (net.Listener, error) {
	st, err := decodeState(h)
	if err != nil {
		return nil, err
	}
	if st.EgressPort == 0 {
		return nil, fmt.Errorf("sandbox %s has no egress port", st.Dir)
	}
	d.held.mu.Lock()
	ln := d.held.m[st.Dir]
	delete(d.held.m, st.Dir)
	d.held.mu.Unlock()
	if ln != nil {
		return ln, nil
	}
	ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(st.EgressPort))))
	if err != nil {
		return nil, fmt.Errorf("egress port %d: %w", st.EgressPort, err)
	}
	return ln, nil
}

// proxyURL is the sandbox's egress proxy as the sandbox reaches it.
func proxyURL(port uint16) string {
	return "http://127.0.0.1:" + strconv.Itoa(int(port))
}
