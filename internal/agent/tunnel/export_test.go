package tunnel

import "net"

// SetNetCheck replaces the check that the loopback is the sandbox's own
// (tests run in the host's network namespace), and the number of tunnels
// a Service opens at once when slots is positive, for services made after
// it; GET /ports reads the check at each request. It returns what
// restores both.
func SetNetCheck(check func() error, slots int) (restore func()) {
	oldCheck, oldSlots := netCheck, tunnelSlots
	netCheck = check
	if slots > 0 {
		tunnelSlots = slots
	}
	return func() { netCheck, tunnelSlots = oldCheck, oldSlots }
}

// OwnLoopback is the real check.
var OwnLoopback = ownLoopback

// ParseListening parses a /proc/net/tcp (family FamilyIPv4) or
// /proc/net/tcp6 (FamilyIPv6) table.
var ParseListening = parseListening

// Addr is where the forwarder listens.
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }
