package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
)

func (a *API) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var req api.CreateSnapshotRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	snap, err := a.cfg.Sandboxes.Snapshot(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, snap)
}

func (a *API) listSandboxSnapshots(w http.ResponseWriter, r *http.Request) {
	a.listSnapshotsOf(w, r, r.PathValue("id"))
}

func (a *API) listSnapshots(w http.ResponseWriter, r *http.Request) {
	a.listSnapshotsOf(w, r, r.URL.Query().Get("sandbox"))
}

func (a *API) listSnapshotsOf(w http.ResponseWriter, r *http.Request, sandbox string) {
	list, err := a.cfg.Sandboxes.ListSnapshots(r.Context(), sandbox)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SnapshotList{Snapshots: list})
}

func (a *API) getSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := a.cfg.Sandboxes.GetSnapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

func (a *API) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Sandboxes.DeleteSnapshot(r.Context(), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) restoreSandbox(w http.ResponseWriter, r *http.Request) {
	var req api.RestoreRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	sb, err := a.cfg.Sandboxes.Restore(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) forkSandbox(w http.ResponseWriter, r *http.Request) {
	var req api.ForkRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.cfg.Sandboxes.Fork(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, res)
}
