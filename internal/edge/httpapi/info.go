package httpapi

import (
	"net/http"
)

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (a *API) info(w http.ResponseWriter, r *http.Request) {
	info := a.cfg.Sandboxes.Info()
	info.Version = a.cfg.Version
	info.Store = a.cfg.StoreName
	info.Storage = a.cfg.Storage
	writeJSON(w, http.StatusOK, info)
}
