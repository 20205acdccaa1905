package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/secrets"
)

// The secret routes take values and answer with metadata only: values are
// write-only. Nothing here reveals a value (secrets_test.go checks that no
// handler calls Service.Reveal), and no error message quotes a request
// body.

func (a *API) createSecret(w http.ResponseWriter, r *http.Request, svc *secrets.Service) {
	var req api.CreateSecretRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	sec, err := svc.Create(r.Context(), secrets.Spec{Name: req.Name, Description: req.Description, Kind: req.Kind, Registry: req.Registry},
		secrets.NewValue([]byte(req.Value)))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sec)
}

func (a *API) replaceSecret(w http.ResponseWriter, r *http.Request, svc *secrets.Service) {
	var req api.ReplaceSecretRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	sec, err := svc.Replace(r.Context(), r.PathValue("name"), req.Description, secrets.NewValue([]byte(req.Value)))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sec)
}

func (a *API) listSecrets(w http.ResponseWriter, r *http.Request, svc *secrets.Service) {
	list, err := svc.List(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *API) getSecret(w http.ResponseWriter, r *http.Request, svc *secrets.Service) {
	sec, err := svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sec)
}

func (a *API) deleteSecret(w http.ResponseWriter, r *http.Request, svc *secrets.Service) {
	if err := svc.Delete(r.Context(), r.PathValue("name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// secrets returns the secret service, or why there is none.
func (a *API) secrets() (*secrets.Service, error) {
	if a.cfg.Secrets == nil {
		return nil, errdefs.Unavailable("secrets_unavailable", "this server has no secret store")
	}
	return a.cfg.Secrets, nil
}
