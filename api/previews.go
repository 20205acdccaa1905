package api

import "time"

// Previews: the router serves http(s)://<port>-<sandbox id>.<preview
// domain>/ from <port> on the sandbox's loopback: 127.0.0.1, or ::1 when
// nothing listens there. A port is private unless set public; a private
// one lets in an API key of the sandbox's tenant, or a signed URL (and
// the cookie it leaves in the browser).

// PortRequest is the body of PUT /v1/sandboxes/{id}/ports/{port}.
type PortRequest struct {
	// Public lets everyone reach the port's preview without credentials.
	Public *bool `json:"public"`
}

// Port is a port's preview setting and, in a list, whether something
// listens on it in the sandbox. A port never set is private.
type Port struct {
	Port   int  `json:"port"`
	Public bool `json:"public"`
	// URL is the preview's address (without credentials).
	URL string `json:"url"`
	// Configured is true when the port has a setting (PUT
	// /v1/sandboxes/{id}/ports/{port}); false for a port listed only
	// because something listens on it.
	Configured bool `json:"configured"`
	// UpdatedAt is when the setting last changed; absent without one.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Listening says whether a TCP socket listens on the port in the
	// sandbox now; absent when that is not known (PortList.ListeningError
	// says why).
	Listening *bool `json:"listening,omitempty"`
	// Addresses are where it listens: "127.0.0.1" and "::1" (loopback,
	// which a preview reaches, as it does any other loopback address),
	// "0.0.0.0" and "::" (every address); IPv4 first.
	Addresses []string `json:"addresses,omitempty"`
}

// PortList is the answer of GET /v1/sandboxes/{id}/ports: the ports with
// a setting and those listening in the sandbox, in port order.
type PortList struct {
	Ports []Port `json:"ports"`
	// ListeningError, when set, says why the ports carry no listening
	// state: sandbox_not_running, agent_too_old (the sandbox's agent
	// predates the list of listening ports), previews_unsupported (the
	// sandbox has no network of its own), or the agent did not answer.
	ListeningError *ErrorBody `json:"listening_error,omitempty"`
}

// PreviewURLRequest is the optional body of
// POST /v1/sandboxes/{id}/ports/{port}/url.
type PreviewURLRequest struct {
	// ExpiresInS is how long the URL lets its holder in: 3600 (an hour)
	// when zero, at most 86400 (a day).
	ExpiresInS int `json:"expires_in_s,omitempty"`
}

// PreviewURL is a signed preview URL: whoever has it reaches the port,
// private or not, until ExpiresAt. A browser that opens it gets a cookie
// for that preview's host that lasts as long.
type PreviewURL struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// EventPreviewReconnectStorm records a client opening WebSockets to one
// preview port over and over (a dev server's reload client against an
// app that keeps failing, say): data has port, count and window_s. It is
// recorded at most once a minute per sandbox.
const EventPreviewReconnectStorm = "preview.reconnect_storm"
