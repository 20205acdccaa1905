package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/settings"
)

// The settings routes are an admin's both ways: the settings touch every
// tenant, and the read-only ones say where the server keeps its state and
// what its sandboxes may reach. The store refuses anyone else again.

func (a *API) getSettings(w http.ResponseWriter, r *http.Request, svc *settings.Service) {
	writeJSON(w, http.StatusOK, svc.Get())
}

// patchSettings changes the settings the body names, an object of keys
// and values; the others stay as they are.
func (a *API) patchSettings(w http.ResponseWriter, r *http.Request, svc *settings.Service) {
	var body json.RawMessage
	if err := a.decodeJSON(w, r, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	view, err := svc.Patch(r.Context(), body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// settings returns the settings service, or why there is none.
func (a *API) settings() (*settings.Service, error) {
	if a.cfg.Settings == nil {
		return nil, errdefs.Unavailable("settings_unavailable", "this server changes no setting while it runs")
	}
	return a.cfg.Settings, nil
}
