package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// metrics answers GET /metrics: the server's Prometheus metrics, for admin
// keys; 503 when the server keeps none.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Metrics == nil {
		a.writeError(w, r, errdefs.Unavailable("metrics_disabled", "this server keeps no metrics"))
		return
	}
	a.cfg.Metrics.Handler().ServeHTTP(w, r)
}
