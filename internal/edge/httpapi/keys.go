package httpapi

import (
	"cmp"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// createKey makes a key in the caller's tenant, recorded as made by the
// caller's key (auth.Authenticator.CreateKey). The store refuses a key
// more powerful than the caller's (403 <role>_required); the route
// refuses readers.
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var req api.CreateKeyRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	req.Role = cmp.Or(req.Role, api.RoleMember)
	if !tenancy.ValidRole(req.Role) {
		a.writeError(w, r, errdefs.Invalid("invalid_request", "role must be %q, %q or %q", api.RoleReader, api.RoleMember, api.RoleAdmin))
		return
	}
	if len(req.Name) > 128 {
		a.writeError(w, r, errdefs.Invalid("invalid_request", "name must be at most 128 characters"))
		return
	}
	k, err := a.cfg.Auth.CreateKey(r.Context(), req.Name, req.Role)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, k)
}

func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := a.cfg.Auth.ListKeys(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keys)
}

// deleteKey revokes a key and, with ?cascade=true, every key it made,
// transitively; their requests in flight end (auth.Authenticator.Revoke).
func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	cascade, err := queryBool(r.URL.Query().Get("cascade"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if _, err := a.cfg.Auth.Revoke(r.Context(), r.PathValue("id"), cascade); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
