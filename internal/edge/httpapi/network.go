package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
)

func (a *API) getNetwork(w http.ResponseWriter, r *http.Request) {
	n, err := a.cfg.Sandboxes.Network(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, n, err)
}

// setNetwork answers PUT /v1/sandboxes/{id}/network: a new egress policy,
// in force from the next connection.
func (a *API) setNetwork(w http.ResponseWriter, r *http.Request) {
	var p api.NetworkPolicy
	if err := a.decodeJSON(w, r, &p); err != nil {
		a.writeError(w, r, err)
		return
	}
	n, err := a.cfg.Sandboxes.SetNetwork(r.Context(), r.PathValue("id"), p)
	a.answer(w, r, http.StatusOK, n, err)
}
