package httpapi

import (
	"mime"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/templates"
)

// createTemplate pulls an image (a JSON body naming its ref) or imports
// one (the archive itself as the body, Content-Type application/x-tar,
// named by ?name=).
func (a *API) createTemplate(w http.ResponseWriter, r *http.Request, svc *templates.Service) {
	var (
		t   api.Template
		err error
	)
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-tar" {
		t, err = svc.Import(r.Context(), r.URL.Query().Get("name"), r.Body)
	} else {
		if r.URL.Query().Has("name") {
			a.writeError(w, r, errdefs.Invalid("unknown_parameter", "?name= is for an uploaded archive (Content-Type application/x-tar); a pull names its template in the body"))
			return
		}
		var req api.CreateTemplateRequest
		if err := a.decodeJSON(w, r, &req); err != nil {
			a.writeError(w, r, err)
			return
		}
		if req.Snapshot != "" {
			if req.Ref != "" {
				a.writeError(w, r, errdefs.Invalid("invalid_template", "a template comes from a ref or a snapshot, not both"))
				return
			}
			// The snapshot's files are on its node's disk: the template is
			// made there.
			if node, _ := a.snapshotNode(r.Context(), req.Snapshot); a.sendTo(w, r, node, req) {
				return
			}
			t, err = svc.FromSnapshot(r.Context(), req.Name, req.Snapshot)
		} else {
			t, err = svc.Pull(r.Context(), req)
		}
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (a *API) listTemplates(w http.ResponseWriter, r *http.Request, svc *templates.Service) {
	list, err := svc.List(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *API) getTemplate(w http.ResponseWriter, r *http.Request, svc *templates.Service) {
	t, err := svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *API) deleteTemplate(w http.ResponseWriter, r *http.Request, svc *templates.Service) {
	if err := svc.Delete(r.Context(), r.PathValue("name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) templates() (*templates.Service, error) {
	if a.cfg.Templates == nil {
		return nil, errdefs.Unavailable("templates_unavailable", "this server starts no sandbox from an image: its default driver cannot (GET /v1/info)")
	}
	return a.cfg.Templates, nil
}
