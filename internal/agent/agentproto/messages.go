package agentproto

import "github.com/hutchdev/hutch/internal/agent/confine"

// Health is the answer of GET /health.
type Health struct {
	OK        bool   `json:"ok"`
	SandboxID string `json:"sandbox_id"`
	Pid       int    `json:"pid"`
	Info
}

// Ready is the one line hutch-agent writes to its stdout once it listens
// and has confined itself: {"ready":true,"pid":…,"confine":…}, or
// {"ready":false,"error":"…"} before it exits 1. Confine is null when the
// envelope asked for no confinement.
type Ready struct {
	Ready   bool            `json:"ready"`
	Pid     int             `json:"pid,omitempty"`
	Confine *confine.Report `json:"confine"`
	Error   string          `json:"error,omitempty"`
	Info
}

// HeaderTunnel, on a tunnel's 101 answer, is TunnelPassed when the
// socket to the sandbox's port came with it (SCM_RIGHTS), to be used
// directly.
const (
	HeaderTunnel = "X-Hutch-Tunnel"
	TunnelPassed = "passed"
)

// EgressAddr is where the agent's egress forwarder listens inside a
// sandbox; the sandbox's HTTP_PROXY and HTTPS_PROXY point at it.
const EgressAddr = "127.0.0.1:3128"

// EgressPassed is the one byte an agent's forwarder writes on a new
// connection to the egress socket, with the sandbox's connection to
// EgressAddr attached (SCM_RIGHTS), when the control plane asked for the
// sandbox's connections themselves (nsinit.Config.EgressPass): the proxy
// then talks to the sandbox's client directly, and the connection to the
// egress socket carries nothing more. Without it, each connection to the
// egress socket carries one sandbox connection's bytes.
const EgressPassed = 'P'

// The trailers of a GET /snapshot answer (a layer of what changed in the
// sandbox's root, as a tar): how long the sandbox's processes were
// stopped, in nanoseconds, whether all were seen stopped ("true"), and
// the layer's entries and files' bytes; or why the layer was cut short.
const (
	TrailerSnapshotError   = "X-Hutch-Snapshot-Error"
	TrailerSnapshotPause   = "X-Hutch-Snapshot-Pause"
	TrailerSnapshotFrozen  = "X-Hutch-Snapshot-Frozen"
	TrailerSnapshotEntries = "X-Hutch-Snapshot-Entries"
	TrailerSnapshotBytes   = "X-Hutch-Snapshot-Bytes"
)
