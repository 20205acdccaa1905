// Package netpolicy is a sandbox's network policy (none, public or an
// allowlist) as the control plane checks and applies it: the policy an
// API request names, parsed once (Parse); what it lets through, by name
// and by resolved address (AllowName, AllowAddr), with the ranges no
// public service has (Private); and the egress proxy that enforces it for
// one running sandbox, as the sandbox service starts it (Proxies, Proxy;
// internal/edge/egress is the proxy).
package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// deniedPrefixes are never reached under "public", nor under "allowlist"
// unless the operator allows a range (Config.AllowPrivate): loopback,
// RFC 1918, link-local (the cloud metadata address 169.254.169.254 among
// them), CGNAT, unique-local, multicast, and the unspecified and reserved
// blocks.
var deniedPrefixes = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "fc00::/7", "fe80::/10", "ff00::/8",
)

// Private reports whether ip is in a range no public service has
// (loopback, RFC 1918, link-local, unique-local…): what hutch itself never
// dials on a user's word unless the operator names it.
func Private(ip netip.Addr) bool {
	ip = Canonical(ip)
	for _, d := range deniedPrefixes {
		if d.Contains(ip) {
			return true
		}
	}
	return false
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Policy is a checked api.NetworkPolicy.
type Policy struct {
	Mode    string // api.EgressNone, api.EgressPublic or api.EgressAllowlist
	domains []domainRule
	cidrs   []netip.Prefix
}

// domainRule is one allowlisted name: exact, or "*.suffix" for any
// subdomain of suffix; with the ports it may be reached on (any if none).
type domainRule struct {
	name     string
	wildcard bool
	ports    []uint16
}

// Parse checks p and returns the policy; an empty mode is "public".
func Parse(p api.NetworkPolicy) (Policy, error) {
	out := Policy{Mode: p.Egress}
	switch p.Egress {
	case "":
		out.Mode = api.EgressPublic
	case api.EgressNone, api.EgressPublic:
	case api.EgressAllowlist:
	default:
		return out, errdefs.Invalid("invalid_network", "egress %q: use none, public or allowlist", p.Egress)
	}
	if out.Mode != api.EgressAllowlist && len(p.Allow) > 0 {
		return out, errdefs.Invalid("invalid_network", "allow is only for egress allowlist")
	}
	if len(p.Allow) > 256 {
		return out, errdefs.Invalid("invalid_network", "at most 256 allow entries")
	}
	for _, a := range p.Allow {
		if err := out.add(a); err != nil {
			return out, err
		}
	}
	return out, nil
}

// add parses one allow entry: "host", "*.host", "host:port", "*.host:443",
// or a CIDR such as "10.1.2.0/24".
func (p *Policy) add(entry string) error {
	bad := func(why string) error {
		return errdefs.Invalid("invalid_network", "allow entry %q: %s", entry, why)
	}
	if pr, err := netip.ParsePrefix(entry); err == nil {
		p.cidrs = append(p.cidrs, pr.Masked())
		return nil
	}
	if ip, err := netip.ParseAddr(entry); err == nil {
		p.cidrs = append(p.cidrs, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	host, portStr, hasPort := strings.Cut(entry, ":")
	r := domainRule{}
	if hasPort {
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || port == 0 {
			return bad("the port must be 1 to 65535")
		}
		r.ports = []uint16{uint16(port)}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.wildcard, host = true, rest
	}
	if !validHostname(host) {
		return bad("not a host name, *.domain, IP address or CIDR")
	}
	r.name = host
	p.domains = append(p.domains, r)
	return nil
}

// validHostname accepts DNS names of letters, digits, '-' and '.'.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 || strings.Contains(h, "..") {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Decision is the verdict on one destination.
type Decision struct {
	Allowed bool
	Reason  string // why, in words a person acts on
}

// AllowName says whether the policy lets a name on port through, before
// any address is known (allowlist names; none refuses everything).
func (p Policy) AllowName(host string, port uint16) Decision {
	switch p.Mode {
	case api.EgressNone:
		return Decision{Reason: "the sandbox's egress policy is none"}
	case api.EgressPublic:
		return Decision{Allowed: true}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range p.domains {
		match := host == r.name
		if r.wildcard {
			match = strings.HasSuffix(host, "."+r.name)
		}
		if match && (len(r.ports) == 0 || r.ports[0] == port) {
			return Decision{Allowed: true}
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil && p.inCIDRs(ip) {
		return Decision{Allowed: true}
	}
	return Decision{Reason: fmt.Sprintf("%s:%d is not on the sandbox's allowlist", host, port)}
}

// Canonical is the host address ip names, as every check must see it: no
// zone (the kernel ignores one it does not need, so "::1%lo" is ::1, and
// netip.Prefix.Contains is false for any zoned address) and no IPv4
// mapping (::ffff:127.0.0.1 is 127.0.0.1).
func Canonical(ip netip.Addr) netip.Addr { return ip.WithZone("").Unmap() }

func (p Policy) inCIDRs(ip netip.Addr) bool {
	ip = Canonical(ip)
	for _, c := range p.cidrs {
		if c.Contains(ip) {
			return true
		}
	}
	return false
}

// AllowAddr says whether a resolved address may be dialled: never one in
// deniedPrefixes or the host's own, unless the operator allows its range
// and the sandbox's allowlist names it.
func (p Policy) AllowAddr(ip netip.Addr, named bool, operator []netip.Prefix, own map[netip.Addr]bool) Decision {
	ip = Canonical(ip)
	private := own[ip] || Private(ip)
	if !private {
		if p.Mode == api.EgressAllowlist && !named && !p.inCIDRs(ip) {
			return Decision{Reason: fmt.Sprintf("%s is not on the sandbox's allowlist", ip)}
		}
		return Decision{Allowed: true}
	}
	for _, o := range operator {
		if o.Contains(ip) && p.Mode == api.EgressAllowlist && (named || p.inCIDRs(ip)) {
			return Decision{Allowed: true}
		}
	}
	if own[ip] {
		return Decision{Reason: fmt.Sprintf("%s is the control plane's own address", ip)}
	}
	return Decision{Reason: fmt.Sprintf("%s is a private, loopback, link-local or otherwise internal address", ip)}
}
