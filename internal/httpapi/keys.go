package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/auth"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/tenancy"
)

func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var req api.CreateKeyRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	p, _ := tenancy.From(r.Context())
	switch req.Role {
	case "":
		req.Role = api.RoleMember
	case api.RoleMember:
	case api.RoleAdmin:
		if p.Role != api.RoleAdmin {
			a.writeError(w, r, errdefs.Forbidden("forbidden", "only an admin key can create admin keys"))
			return
		}
	default:
		a.writeError(w, r, errdefs.Invalid("invalid_request", "role must be %q or %q", api.RoleMember, api.RoleAdmin))
		return
	}
	if len(req.Name) > 128 {
		a.writeError(w, r, errdefs.Invalid("invalid_request", "name must be at most 128 characters"))
		return
	}
	k, secret := auth.NewKey(p.TenantID, req.Name, req.Role)
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

func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Store.DeleteKey(r.Context(), r.PathValue("id")); err != nil {
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
		CreatedAt:  k.CreatedAt,
		LastUsedAt: k.LastUsedAt,
	}
}
