package httpapi

import "net/http"

// sandboxMetrics answers GET /v1/sandboxes/{id}/metrics: what a running or
// paused sandbox uses now and its recent history; another state is 409
// sandbox_not_running.
func (a *API) sandboxMetrics(w http.ResponseWriter, r *http.Request) {
	m, err := a.cfg.Sandboxes.Metrics(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, m, err)
}
