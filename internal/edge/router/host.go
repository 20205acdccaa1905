package router

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// Target is what a preview host names: a port of a sandbox.
type Target struct {
	SandboxID string
	Port      int
}

// Host is the preview host of t under domain, without a port:
// "<port>-<sandbox id>.<domain>".
func (t Target) Host(domain string) string {
	return strconv.Itoa(t.Port) + "-" + t.SandboxID + "." + domain
}

// ParseHost reads a Host header of the form
// "<port>-<sandbox id>.<domain>[:<listen port>]", case-insensitively:
// port is 1 to 65535 without leading zeros, the id a lowercase ULID once
// lowered, and domain exactly the given one (lowercase). Anything else is
// an error, so the caller can pass it on to the API.
func ParseHost(host, domain string) (Target, error) {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if !isPort(h[i+1:]) {
			return Target{}, fmt.Errorf("host %q: bad listen port", host)
		}
		h = h[:i]
	}
	label, rest, ok := strings.Cut(h, ".")
	if !ok || rest != domain {
		return Target{}, fmt.Errorf("host %q is not under the preview domain %q", host, domain)
	}
	p, id, ok := strings.Cut(label, "-")
	if !ok || !isPort(p) {
		return Target{}, fmt.Errorf("host %q: the first label is not <port>-<sandbox id>", host)
	}
	if !ids.Valid(id) {
		return Target{}, fmt.Errorf("host %q: %q is not a sandbox id", host, id)
	}
	port, _ := strconv.Atoi(p)
	return Target{SandboxID: id, Port: port}, nil
}

// isPort reports whether s is a decimal port from 1 to 65535 without a
// sign or leading zeros.
func isPort(s string) bool {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(s)
	return n <= 65535
}
