package httpapi

import (
	"cmp"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/store"
)

// createKey makes a key in the caller's tenant, recorded as made by the
// caller's key. The store refuses a key more powerful than the caller's
// (403 <role>_required); the route refuses readers.
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
	p, _ := tenancy.From(r.Context())
	k, secret := auth.NewKey(p.TenantID, req.Name, req.Role)
	k.CreatedBy = p.KeyID
	if err := a.cfg.Store.CreateKey(r.Context(), k); err != nil {
		a.writeError(w, r, err)
		return
	}
	out := keyToAPI(k)
	out.Secret = secret
	writeJSON(w, http.StatusCreated, out)
}

func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := a.cfg.Store.ListKeys(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := api.KeyList{Keys: make([]api.Key, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyToAPI(k))
	}
	writeJSON(w, http.StatusOK, out)
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

func keyToAPI(k store.Key) api.Key {
	return api.Key{
		ID:         k.ID,
		TenantID:   k.TenantID,
		Name:       k.Name,
		Role:       k.Role,
		Prefix:     k.Prefix,
		CreatedBy:  k.CreatedBy,
		CreatedAt:  k.CreatedAt,
		LastUsedAt: k.LastUsedAt,
	}
}
