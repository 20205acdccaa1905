package api

// Egress policies.
const (
	// EgressNone lets nothing out.
	EgressNone = "none"
	// EgressPublic (the default) lets the sandbox reach the internet, and
	// nothing private: no loopback, RFC 1918, link-local (the cloud
	// metadata address among them), CGNAT, unique-local or multicast
	// address, and not the control plane itself.
	EgressPublic = "public"
	// EgressAllowlist lets it reach only what Allow names.
	EgressAllowlist = "allowlist"
)

// NetworkPolicy is a sandbox's egress policy: at create (the network field
// of CreateSandboxRequest) and with PUT /v1/sandboxes/{id}/network, which
// takes effect for the next connection. Everything leaves through the
// proxy the sandbox's HTTP_PROXY and HTTPS_PROXY point at; the sandbox has
// no other way out.
type NetworkPolicy struct {
	Egress string `json:"egress"`
	// Allow, for EgressAllowlist: host names ("registry.npmjs.org"),
	// wildcards ("*.example.com", any subdomain), either with a port
	// ("api.example.com:443"), IP addresses and CIDRs. A private address
	// is reachable only when the server's operator allows its range too.
	Allow []string `json:"allow,omitempty"`
}

// Network is a sandbox's egress policy and what went through it.
type Network struct {
	Policy NetworkPolicy `json:"policy"`
	// Allowed and Denied count connections (and plain HTTP requests);
	// BytesOut and BytesIn what allowed ones carried.
	Allowed  int64 `json:"allowed"`
	Denied   int64 `json:"denied"`
	BytesOut int64 `json:"bytes_out"`
	BytesIn  int64 `json:"bytes_in"`
}

// Egress event types, of the egress proxy's decisions about one
// destination: the first at once, the rest counted into one event per
// window. Data has "host", "port" and "count" (decisions), "bytes_out"
// and "bytes_in" when allowed, "reason" when denied, and for a count of
// a window "first_at", "last_at" and "window_s"; "other": true (no host)
// counts the destinations beyond those named.
const (
	EventEgressAllowed = "egress.allowed"
	EventEgressDenied  = "egress.denied"
)

// EventNetworkChanged records a change of a sandbox's egress policy.
const EventNetworkChanged = "network.changed"
