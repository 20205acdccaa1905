package templates

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/control/netpolicy"
)

// RegistryPolicy is how the server reaches registries on a tenant's word.
// A pull makes the server itself connect where a tenant says, so, as the
// egress proxy does for sandboxes, it never dials a private address
// (loopback, RFC 1918, link-local and the cloud metadata address among
// them) unless the operator names the registry; the check is on the
// address the socket connects to, so DNS cannot get around it.
type RegistryPolicy struct {
	// Insecure are registries ("host:port") the operator runs on its own
	// network: reached at private addresses and over plain HTTP.
	Insecure []string
}

// insecure reports whether ref's registry is one the operator named.
func (p RegistryPolicy) insecure(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	return slices.Contains(p.Insecure, host)
}

// client is the HTTP client of pulls.
func (p RegistryPolicy) client() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	guarded := &net.Dialer{Timeout: 30 * time.Second, ControlContext: refusePrivate}
	plain := &net.Dialer{Timeout: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slices.Contains(p.Insecure, addr) {
			return plain.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
	t.Proxy = nil
	return &http.Client{Transport: t}
}

// refusePrivate refuses a connection to a private address.
func refusePrivate(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("registry: dialling %q, not an address", address)
	}
	if netpolicy.Private(ap.Addr()) || ap.Addr().Zone() != "" {
		return fmt.Errorf("registry: %s is a private address; the operator must name the registry (--registry-insecure) for hutch to reach it", ap.Addr())
	}
	return nil
}
