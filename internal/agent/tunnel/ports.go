package tunnel

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"

	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// GET /ports lists the TCP sockets listening in the sandbox
// (agentproto.FeaturePorts), read from /proc/net/tcp and /proc/net/tcp6,
// which show the network namespace of the agent, the sandbox's own. The
// agent's egress forwarder (agentproto.EgressAddr) is left out: it is the
// sandbox's way out, not an app, and its port is never previewed. An
// agent whose loopback is not the sandbox's own (the process driver: the
// host's network) answers 501 previews_unsupported, as a tunnel does,
// rather than list the host's sockets.

// Families of a listening socket.
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
)

// Scopes of a listening socket's address.
const (
	// ScopeLoopback: 127.0.0.0/8 or ::1 (also IPv4-mapped).
	ScopeLoopback = "loopback"
	// ScopeAny: 0.0.0.0 or ::, every address of the namespace.
	ScopeAny = "any"
	// ScopeOther: any other address.
	ScopeOther = "other"
)

// ListeningSocket is one TCP socket listening in the sandbox.
type ListeningSocket struct {
	Port int `json:"port"`
	// Family is FamilyIPv4 or FamilyIPv6: the socket's, so a dual-stack
	// [::] is "ipv6" with address "::".
	Family string `json:"family"`
	// Address is the address it is bound to: "127.0.0.1", "::1",
	// "0.0.0.0", "::".
	Address string `json:"address"`
	// Scope is ScopeLoopback, ScopeAny or ScopeOther.
	Scope string `json:"scope"`
}

// ListeningPorts is the answer of GET /ports: the listening sockets by
// port, then family, then address, each (family, address, port) once.
type ListeningPorts struct {
	Ports []ListeningSocket `json:"ports"`
}

// procNetTCP are the kernel's tables of TCP sockets of this network
// namespace, and the family of each.
var procNetTCP = []struct{ path, family string }{
	{"/proc/net/tcp", FamilyIPv4},
	{"/proc/net/tcp6", FamilyIPv6},
}

func (s *Service) handlePorts(w http.ResponseWriter, r *http.Request) {
	if err := netCheck(); err != nil {
		s.writeError(w, r, errdefs.Wrap(errdefs.ErrUnsupported, codePreviewsUnsupported, err,
			"this sandbox's driver does not give it a network of its own, so the ports listening in it cannot be listed"))
		return
	}
	socks, err := readListening()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, ListeningPorts{Ports: socks})
}

// readListening reads the TCP sockets listening in the agent's network
// namespace, but the egress forwarder's, in the order of ListeningPorts.
func readListening() ([]ListeningSocket, error) {
	out := []ListeningSocket{}
	skip := egressPort()
	for _, t := range procNetTCP {
		b, err := os.ReadFile(t.path)
		if t.family == FamilyIPv6 && errors.Is(err, fs.ErrNotExist) {
			continue // a kernel without IPv6
		}
		if err != nil {
			return nil, fmt.Errorf("list listening ports: %w", err)
		}
		socks, err := parseListening(b, t.family)
		if err != nil {
			return nil, fmt.Errorf("list listening ports: %s: %w", t.path, err)
		}
		for _, ls := range socks {
			if strconv.Itoa(ls.Port) != skip {
				out = append(out, ls)
			}
		}
	}
	slices.SortFunc(out, func(a, b ListeningSocket) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Family, b.Family), cmp.Compare(a.Address, b.Address))
	})
	return slices.Compact(out), nil
}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// parseListening returns the listening sockets of a /proc/net/tcp or
// /proc/net/tcp6 table (family says which). Each line after the header
// is "sl local_address rem_address st …", local_address being the
// address in hex, 32-bit words as the kernel holds them (network order
// read as host-order words), a colon and the port in hex.
func parseListening(b []byte, family string) ([]ListeningSocket, error) {
	size := 4
	if family == FamilyIPv6 {
		size = 16
	}
	var out []ListeningSocket
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 0; sc.Scan(); n++ {
		f := bytes.Fields(sc.Bytes())
		if n == 0 || len(f) < 4 {
			continue // the header, or a blank line
		}
		if string(f[3]) != tcpListen {
			continue
		}
		addr, port, ok := bytes.Cut(f[1], []byte(":"))
		if !ok || len(addr) != size*2 || len(port) != 4 {
			return nil, fmt.Errorf("%s line %d: local address %q", family, n+1, f[1])
		}
		raw, err := hex.DecodeString(string(addr))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: local address %q: %w", family, n+1, f[1], err)
		}
		p, err := strconv.ParseUint(string(port), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: port %q: %w", family, n+1, port, err)
		}
		// Each word was printed as a host-order number: turn it back into
		// the bytes the kernel held.
		for i := 0; i < len(raw); i += 4 {
			binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
		}
		a, _ := netip.AddrFromSlice(raw)
		out = append(out, ListeningSocket{Port: int(p), Family: family, Address: a.String(), Scope: scopeOf(a)})
	}
	return out, sc.Err()
}

// scopeOf classifies a bound address.
func scopeOf(a netip.Addr) string {
	switch u := a.Unmap(); {
	case u.IsLoopback():
		return ScopeLoopback
	case u.IsUnspecified():
		return ScopeAny
	}
	return ScopeOther
}
