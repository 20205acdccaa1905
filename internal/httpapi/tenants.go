package httpapi

import (
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/auth"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// createTenant makes a tenant and its first key. Its route takes admin
// keys only, and the store checks again.
func (a *API) createTenant(w http.ResponseWriter, r *http.Request) {
	var req api.CreateTenantRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 128 {
		a.writeError(w, r, errdefs.Invalid("invalid_request", "name must be 1-128 characters"))
		return
	}
	t, k, secret, err := auth.CreateTenant(r.Context(), a.cfg.Store, req.Name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	key := keyToAPI(k)
	key.Secret = secret
	writeJSON(w, http.StatusCreated, api.Tenant{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, Key: &key})
}
