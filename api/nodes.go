package api

import "time"

// The states of a node as GET /v1/nodes shows them: active or draining
// as its operator set it, lost when its last heartbeat is older than the
// bound (10 s) whatever it was set to.
const (
	NodeActive   = "active"
	NodeDraining = "draining"
	NodeLost     = "lost"
)

// Node is one node of the fleet (GET /v1/nodes): a hutch serve on the
// shared store, with its capacity and load as it last reported them.
type Node struct {
	Name string `json:"name"`
	// Advertise is the base URL other nodes reach its API at.
	Advertise string            `json:"advertise"`
	State     string            `json:"state"`
	Drivers   []string          `json:"drivers"`
	Labels    map[string]string `json:"labels,omitempty"`
	// CPUs and MemoryBytes are what its sandboxes may be promised
	// together (0: no bound); CommittedMemoryBytes is what their memory
	// limits promise now; Running is how many run (paused ones included).
	CPUs                 float64    `json:"cpus"`
	MemoryBytes          int64      `json:"memory_bytes"`
	CommittedMemoryBytes int64      `json:"committed_memory_bytes"`
	Running              int        `json:"running"`
	DrainDeadline        *time.Time `json:"drain_deadline,omitempty"`
	StartedAt            time.Time  `json:"started_at"`
	HeartbeatAt          time.Time  `json:"heartbeat_at"`
	// HeartbeatAgeMS is how long ago its last heartbeat was, on the
	// store's clock.
	HeartbeatAgeMS int64 `json:"heartbeat_age_ms"`
	// Leases are the fleet-wide leases it holds (the work it runs for
	// the whole fleet).
	Leases []string `json:"leases,omitempty"`
}

// NodeList is the body of GET /v1/nodes.
type NodeList struct {
	Nodes []Node `json:"nodes"`
}

// DrainNodeRequest is the body of POST /v1/nodes/{name}/drain, which
// may be empty: DeadlineS, when set, is how many seconds from now the
// node stops the sandboxes it still runs; without it they are left to
// finish.
type DrainNodeRequest struct {
	DeadlineS int `json:"deadline_s,omitempty"`
}
