package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/volumes"
)

func (a *API) createVolume(w http.ResponseWriter, r *http.Request, svc *volumes.Service) {
	var req api.CreateVolumeRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := svc.Create(r.Context(), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (a *API) listVolumes(w http.ResponseWriter, r *http.Request, svc *volumes.Service) {
	list, err := svc.List(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *API) getVolume(w http.ResponseWriter, r *http.Request, svc *volumes.Service) {
	v, err := svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *API) deleteVolume(w http.ResponseWriter, r *http.Request, svc *volumes.Service) {
	if err := svc.Delete(r.Context(), r.PathValue("name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) volumes() (*volumes.Service, error) {
	if a.cfg.Volumes == nil {
		return nil, errdefs.Unavailable("volumes_unavailable", "this server keeps no volumes: its default driver mounts none (GET /v1/info)")
	}
	return a.cfg.Volumes, nil
}
