package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/forward"
)

// The API's one forwarding decision: a route of one sandbox
// (/v1/sandboxes/{id}/..., but those marked anyNode) is served by the
// node that runs the sandbox, and one of an app (/v1/apps/{id}/...) by
// the node that runs its sandboxes. Any other node authenticates the client,
// then forwards the request there as the client's key id
// (internal/edge/forward); the owner serves it as that key id (begin).

// begin authenticates r: by its Authorization header, or, when another
// node forwarded it (forward.Forwarder.Accept verified the hop), by the
// key id that node authenticated, which must still stand.
func (a *API) begin(r *http.Request) (context.Context, func(), error) {
	hop, ok := forward.HopFrom(r.Context())
	if !ok {
		return a.cfg.Auth.Begin(r.Context(), r.Header.Get("Authorization"))
	}
	if hop.KeyID == "" {
		return nil, nil, errdefs.New(errdefs.ErrUnauthorized, "forward_unauthorized",
			"node %s forwarded this API request without a key", hop.From)
	}
	return a.cfg.Auth.BeginKey(r.Context(), hop.KeyID)
}

// toOwner serves r here when this node runs its sandbox, and forwards it
// to the node that does otherwise.
func (a *API) toOwner(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.elsewhere(w, r, r.PathValue("id")) {
			next(w, r)
		}
	}
}

// toAppOwner is toOwner for a route of app {id}: its node is its dev
// sandbox's (else its live one's), where the apps layer made both.
func (a *API) toAppOwner(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app, err := a.cfg.Apps.Get(r.Context(), r.PathValue("id"))
		if err != nil || !a.elsewhere(w, r, cmp.Or(app.Dev, app.Live)) {
			next(w, r)
		}
	}
}

// toDiskOwner is toOwner for a route of something on one node's disk (a
// snapshot's, a volume's or a template's files): nodeOf says which node
// holds what r names, and r is served there, so the files go with the
// record.
func (a *API) toDiskOwner(nodeOf func(ctx context.Context, name string) (string, error), param string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		node, err := nodeOf(r.Context(), r.PathValue(param))
		if err != nil || node == "" || node == a.cfg.Forward.Node() {
			next(w, r)
			return
		}
		p, _ := tenancy.From(r.Context())
		a.cfg.Forward.Forward(w, r, node, p.KeyID)
	}
}

// snapshotNode is the node whose disk holds snapshot id's files, ""
// when any node can start from it (sandbox.Snapshots.SnapshotNode).
func (a *API) snapshotNode(ctx context.Context, id string) (string, error) {
	return a.cfg.Sandboxes.SnapshotNode(ctx, id)
}

// volumeNode is the node whose disk holds volume name's files.
func (a *API) volumeNode(ctx context.Context, name string) (string, error) {
	if a.cfg.Volumes == nil {
		return "", nil
	}
	v, err := a.cfg.Volumes.Get(ctx, name)
	return v.Node, err
}

// templateNode is the node whose disk holds template name's layers; ""
// for the host template, which every node has.
func (a *API) templateNode(ctx context.Context, name string) (string, error) {
	if a.cfg.Templates == nil || name == "" || name == api.HostTemplate {
		return "", nil
	}
	t, err := a.cfg.Templates.Get(ctx, name)
	return t.Node, err
}

// diskNode is the node a create must be made on for the files it starts
// from (its snapshot's, its template's layers, its volumes'), "" when
// they are on every node; 409 disk_nodes_differ when they are on
// different nodes. What the caller may not see, or what is not there,
// names no node: the create is refused where it is made.
func (a *API) diskNode(ctx context.Context, req api.CreateSandboxRequest) (string, error) {
	var node, what string
	add := func(n, of string, err error) error {
		if err != nil || n == "" {
			return nil
		}
		if node != "" && n != node {
			return errdefs.Conflict("disk_nodes_differ", "%s is on node %s and %s on node %s: a sandbox is made on one node, with the files of that node's disk", what, node, of, n)
		}
		node, what = n, of
		return nil
	}
	if req.Snapshot != "" {
		n, err := a.snapshotNode(ctx, req.Snapshot)
		if err := add(n, "snapshot "+req.Snapshot, err); err != nil {
			return "", err
		}
	}
	n, err := a.templateNode(ctx, req.Template)
	if err := add(n, "template "+req.Template, err); err != nil {
		return "", err
	}
	for _, m := range req.Volumes {
		n, err := a.volumeNode(ctx, m.Name)
		if err := add(n, "volume "+m.Name, err); err != nil {
			return "", err
		}
	}
	return node, nil
}

// sendTo forwards r, whose JSON body was decoded into v, to node with v
// as its body, and reports true; false when it is served here: no
// forwarding, node unknown or this one, or r was forwarded here.
func (a *API) sendTo(w http.ResponseWriter, r *http.Request, node string, v any) bool {
	if _, forwarded := forward.HopFrom(r.Context()); forwarded || a.cfg.Forward == nil || node == "" || node == a.cfg.Forward.Node() {
		return false
	}
	body, err := json.Marshal(v)
	if err != nil {
		a.writeError(w, r, err)
		return true
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	p, _ := tenancy.From(r.Context())
	a.cfg.Forward.Forward(w, r, node, p.KeyID)
	return true
}

// elsewhere forwards r to the node that runs sandbox id and reports
// true, or reports false when r is served here: this node runs it, or
// the caller may not see it (the handler answers 404 as always).
func (a *API) elsewhere(w http.ResponseWriter, r *http.Request, id string) bool {
	if id == "" {
		return false
	}
	node, err := a.cfg.Sandboxes.NodeOf(r.Context(), id)
	if err != nil || node == "" || node == a.cfg.Forward.Node() {
		return false
	}
	p, _ := tenancy.From(r.Context())
	a.cfg.Forward.Forward(w, r, node, p.KeyID)
	return true
}

// place chooses the node a create is sent to: one that starts from
// files on one node's disk (a snapshot, an image template, volumes) is
// made there (diskNode), others where Placement says, passing over the
// nodes in skip.
func (a *API) place(ctx context.Context, req api.CreateSandboxRequest, skip []string) (string, error) {
	node, err := a.diskNode(ctx, req)
	switch {
	case err != nil:
		return "", err
	case node == "":
		return a.cfg.Placement.Place(ctx, req, skip)
	case slices.Contains(skip, node):
		return "", errdefs.Unavailable("node_unavailable", "node %s, which keeps the files this sandbox starts from, cannot be reached; try again later", node)
	}
	return node, nil
}

// placeElsewhere places the sandbox req asks for (Config.Placement) and,
// when the node chosen is another, forwards the create there and reports
// true: that node admits and makes it. A create is not idempotent, so it
// is sent to another node once at most; but a node that could not be
// reached at all (the dial failed: it died since its last heartbeat) saw
// nothing of it, and the create is placed again without that node, each
// node tried once; when none is left it is 503 node_unavailable. A
// create another node forwarded here is made here (its node placed it),
// and so is every create without placement, where node_labels are
// refused: there is one node.
func (a *API) placeElsewhere(w http.ResponseWriter, r *http.Request, req api.CreateSandboxRequest) bool {
	return a.placeAndSend(w, r, req, req)
}

// placeAndSend is placeElsewhere for a create of something that makes
// sandboxes like want (an app's): placed as want, r is forwarded with
// body, its decoded request, as its body.
func (a *API) placeAndSend(w http.ResponseWriter, r *http.Request, req api.CreateSandboxRequest, v any) bool {
	sent, err := a.PlaceAndSend(w, r, req, v)
	if err != nil {
		a.writeError(w, r, err)
		return true
	}
	return sent
}

// PlaceAndSend places a create that makes a sandbox like req, and when
// the node chosen is another, forwards r there with v, the create as r
// decoded it, as its body, and reports that it was sent (answered by
// that node); otherwise it reports false and the caller makes it here.
// An error is the caller's to answer, in its own shape: the E2B layer's
// creates are placed with it too.
func (a *API) PlaceAndSend(w http.ResponseWriter, r *http.Request, req api.CreateSandboxRequest, v any) (bool, error) {
	if _, forwarded := forward.HopFrom(r.Context()); forwarded {
		return false, nil
	}
	if a.cfg.Placement == nil || a.cfg.Forward == nil {
		if len(req.NodeLabels) > 0 {
			return false, errdefs.Invalid("node_labels_unsupported", "this server places no sandboxes on other nodes (a single node, or a fleet without a cluster key): node_labels place sandboxes in a fleet of nodes on a shared store")
		}
		return false, nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	p, _ := tenancy.From(r.Context())
	var tried []string
	var unreached error
	for {
		node, err := a.place(r.Context(), req, tried)
		if err != nil {
			if unreached != nil {
				err = errdefs.Wrap(errdefs.ErrUnavailable, "node_unavailable", unreached,
					"no node could be reached to make this sandbox (tried %s); try again later", strings.Join(tried, ", "))
			}
			return false, err
		}
		if node == a.cfg.Forward.Node() {
			return false, nil
		}
		// Each try sends the body from its start; the transport may
		// send it again itself on a pooled connection that was closed
		// before anything was written (GetBody).
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.Body, _ = r.GetBody()
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		if unreached = a.cfg.Forward.Try(w, r, node, p.KeyID); unreached == nil {
			return true, nil
		}
		a.cfg.Log.Warn("create not placed on an unreachable node; placing it again without it", "node", node, "err", unreached)
		tried = append(tried, node)
	}
}
