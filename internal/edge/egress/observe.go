package egress

// Observer is told of each connection a sandbox's proxy decided, as it
// ends (at once for one refused): the verdict and, for an allowed one, the bytes it carried each
// way (out: from the sandbox). It learns no sandbox and no destination,
// which the sandbox's Report has. Its method is called from the proxy's
// connections and must return at once; internal/edge/telemetry's metrics are
// one.
type Observer interface {
	ObserveEgress(verdict string, bytesOut, bytesIn int64)
}

// The verdicts an Observer is told.
const (
	VerdictAllowed = "allowed" // connected and carried
	VerdictDenied  = "denied"  // the sandbox's policy refused the destination
	VerdictFailed  = "failed"  // allowed, but the destination could not be reached
)

func (s *Sandbox) observe(verdict string, out, in int64) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.ObserveEgress(verdict, out, in)
	}
}
