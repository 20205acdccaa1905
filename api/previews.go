package api

import "time"

// Previews: the router serves http(s)://<port>-<sandbox id>.<preview
// domain>/ from 127.0.0.1:<port> inside the sandbox. A port is private
// unless set public; a private one lets in an API key of the sandbox's
// tenant, or a signed URL (and the cookie it leaves in the browser).

// PortRequest is the body of PUT /v1/sandboxes/{id}/ports/{port}.
type PortRequest struct {
	// Public lets everyone reach the port's preview without credentials.
	Public *bool `json:"public"`
}

// Port is a port's preview setting. A port never set is private.
type Port struct {
	Port   int  `json:"port"`
	Public bool `json:"public"`
	// URL is the preview's address (without credentials).
	URL       string    `json:"url"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PortList is the answer of GET /v1/sandboxes/{id}/ports: the ports with a
// setting, in port order.
type PortList struct {
	Ports []Port `json:"ports"`
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
