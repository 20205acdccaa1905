package agent

// SetTunnelNetCheck replaces the check that 127.0.0.1 is the sandbox's own
// loopback, and the number of tunnels a server opens at once when slots is
// positive, for servers made after it (tests run in the host's network
// namespace). It returns what restores both.
func SetTunnelNetCheck(check func() error, slots int) (restore func()) {
	oldCheck, oldSlots := tunnelNetCheck, tunnelSlots
	tunnelNetCheck = check
	if slots > 0 {
		tunnelSlots = slots
	}
	return func() { tunnelNetCheck, tunnelSlots = oldCheck, oldSlots }
}

// OwnLoopback is the real check.
var OwnLoopback = ownLoopback
