package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/nodes"
)

// The node routes are an admin's: the nodes serve every tenant. The
// store refuses anyone else again.

func (a *API) listNodes(w http.ResponseWriter, r *http.Request, n *nodes.Node) {
	list, err := n.List(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *API) getNode(w http.ResponseWriter, r *http.Request, n *nodes.Node) {
	nd, err := n.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nd)
}

// drainNode drains a node; the body (DrainNodeRequest) may be empty.
func (a *API) drainNode(w http.ResponseWriter, r *http.Request, n *nodes.Node) {
	var req api.DrainNodeRequest
	if err := a.decodeOptional(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	nd, err := n.Drain(r.Context(), r.PathValue("name"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nd)
}

func (a *API) activateNode(w http.ResponseWriter, r *http.Request, n *nodes.Node) {
	nd, err := n.Activate(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nd)
}

func (a *API) removeNode(w http.ResponseWriter, r *http.Request, n *nodes.Node) {
	if err := n.Remove(r.Context(), r.PathValue("name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// nodes returns this server's node, or why there is none.
func (a *API) nodes() (*nodes.Node, error) {
	if a.cfg.Nodes == nil {
		return nil, errdefs.Unavailable("nodes_unavailable", "this server keeps no registry of nodes")
	}
	return a.cfg.Nodes, nil
}
