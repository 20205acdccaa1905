package httpapi

import (
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// createTenant makes a tenant and its first key (tenants.Service.Create).
// Its route takes admin keys only, and the store checks again.
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
	t, err := a.cfg.Tenants.Create(r.Context(), req.Name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

// getTenant shows a tenant: the caller's own, or any to an admin (the
// store answers 404 tenant_not_found for another's).
func (a *API) getTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.cfg.Tenants.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// suspendTenant suspends a tenant: its sandboxes stop, its keys only
// read. Its route takes admin keys only, and the store checks again.
func (a *API) suspendTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.cfg.Tenants.Suspend(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// resumeTenant lifts a tenant's suspension; its sandboxes stay stopped.
func (a *API) resumeTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.cfg.Tenants.Resume(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// deleteTenant deletes a tenant with everything it owns: 202 with the
// tenant deleting while the deletion runs in the background (GET shows
// how far it got), 200 with it deleted once done, every time after.
func (a *API) deleteTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.cfg.Tenants.Delete(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusAccepted
	if t.State == api.TenantDeleted {
		status = http.StatusOK
	}
	writeJSON(w, status, t)
}

// getQuotas shows a tenant's quotas and usage, to its own keys and to
// admins.
func (a *API) getQuotas(w http.ResponseWriter, r *http.Request) {
	q, err := a.cfg.Quotas.Quotas(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

// setQuotas replaces a tenant's quotas. Its route takes admin keys only,
// and the store checks again, so a tenant never raises its own.
func (a *API) setQuotas(w http.ResponseWriter, r *http.Request) {
	var req api.Quotas
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	q, err := a.cfg.Quotas.SetQuotas(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}
