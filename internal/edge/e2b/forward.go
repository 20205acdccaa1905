package e2b

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/internal/edge/forward"
)

// In a fleet of nodes only the node that runs a sandbox holds its
// agent's connection, so a call of this layer for a sandbox another node
// runs (an envd call, or a control call naming the sandbox or one of its
// snapshots) is forwarded there once this node has authenticated it, as
// the API forwards its own (internal/edge/httpapi's forward.go): the
// hop carries the key's id, never the key (X-API-KEY is dropped as
// Authorization is), and the owner serves it as that key id. E2B's user
// (Authorization: Basic <user>:), which the hop drops too, goes in
// userHeader, read only from a forwarded request.

// Forwarder carries a request to the node that runs its sandbox
// (forward.Forwarder).
type Forwarder interface {
	Node() string
	Forward(w http.ResponseWriter, r *http.Request, to, keyID string)
}

var _ Forwarder = (*forward.Forwarder)(nil)

// userHeader carries an envd call's user to the node it is forwarded to.
const userHeader = "Hutch-E2b-User"

// forwarded reports whether another node forwarded r here.
func forwarded(r *http.Request) bool {
	_, ok := forward.HopFrom(r.Context())
	return ok
}

// elsewhere forwards r, a call made by key keyID for something on node
// node, there and reports true; false when it is served here: this node
// is node, node is unknown ("": the caller may not see it, or its node
// is lost, which the handler answers), or r was forwarded here already.
func (h *Handler) elsewhere(w http.ResponseWriter, r *http.Request, node, keyID string) bool {
	if h.cfg.Forward == nil || node == "" || node == h.cfg.Forward.Node() || forwarded(r) {
		return false
	}
	out := r.Clone(r.Context())
	out.Header.Del("X-API-KEY")
	h.cfg.Forward.Forward(w, out, node, keyID)
	return true
}

// sandboxNode is the node that runs sandbox id, "" when it is not known
// here.
func (h *Handler) sandboxNode(ctx context.Context, id string) string {
	node, err := h.cfg.Sandboxes.NodeOf(ctx, id)
	if err != nil {
		return ""
	}
	return node
}

// snapshotNode is the node whose disk holds snapshot id's files: its
// sandbox's.
func (h *Handler) snapshotNode(ctx context.Context, id string) string {
	snap, err := h.cfg.Sandboxes.GetSnapshot(ctx, id)
	if err != nil {
		return ""
	}
	sb, err := h.cfg.Sandboxes.Get(ctx, snap.SandboxID)
	if err != nil {
		return ""
	}
	return sb.Node
}
