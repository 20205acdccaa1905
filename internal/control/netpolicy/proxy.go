package netpolicy

import "net"

// Report is told of every decision a sandbox's proxy makes: the
// destination, the verdict, and for an allowed connection, once it ends,
// the bytes it carried each way (out: from the sandbox).
type Report func(host string, port uint16, d Decision, bytesOut, bytesIn int64)

// Proxies start the egress proxy of each running sandbox whose driver
// gives it a channel out (internal/edge/egress.Proxies is one).
type Proxies interface {
	// Serve serves sandbox id's way out on ln under p, reporting each
	// decision to report, until the proxy is closed.
	Serve(id string, ln net.Listener, p Policy, report Report) Proxy
}

// Proxy is one running sandbox's egress proxy.
type Proxy interface {
	// SetPolicy replaces the policy for the connections that follow.
	SetPolicy(p Policy)
	// Counts are the decisions and bytes since the proxy started.
	Counts() Counts
	// Close stops accepting connections; it does not wait for those
	// open.
	Close() error
}

// Counts are what a proxy has let through and refused, and the bytes it
// carried each way.
type Counts struct {
	Allowed, Denied   int64
	BytesOut, BytesIn int64
}
