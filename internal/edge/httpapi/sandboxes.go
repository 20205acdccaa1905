package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

func (a *API) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req api.CreateSandboxRequest
	if r.ContentLength != 0 {
		if err := a.decodeJSON(w, r, &req); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	if a.placeElsewhere(w, r, req) {
		return
	}
	sb, err := a.cfg.Sandboxes.Create(r.Context(), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sb)
}

func (a *API) getSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.cfg.Sandboxes.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) listSandboxes(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	list, err := a.cfg.Sandboxes.List(r.Context(), opts)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func listOptions(r *http.Request) (sandbox.ListOptions, error) {
	q := r.URL.Query()
	opts := sandbox.ListOptions{State: api.SandboxState(q.Get("state")), Cursor: q.Get("cursor")}
	// Any stored state; unavailable is only ever shown, never stored.
	if opts.State != "" && (opts.State == api.StateUnavailable || !slices.Contains(api.SandboxStates, opts.State)) {
		return opts, errdefs.Invalid("invalid_request", "state %q is not a state a sandbox is stored in (%v, but not %s)", opts.State, api.SandboxStates, api.StateUnavailable)
	}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return opts, errdefs.Invalid("invalid_request", "label filter %q must be key=value", l)
		}
		if opts.Labels == nil {
			opts.Labels = map[string]string{}
		}
		opts.Labels[k] = v
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > sandbox.MaxPage {
			return opts, errdefs.Invalid("invalid_request", "limit must be a number from 1 to %d", sandbox.MaxPage)
		}
		opts.Limit = n
	}
	return opts, nil
}

func (a *API) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Apps != nil {
		// An app's sandbox goes with its app (DELETE /v1/apps/{id}), or
		// by promotion and rollback: deleting it here would break a role.
		if err := a.cfg.Apps.Guard(r.Context(), r.PathValue("id")); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	if err := a.cfg.Sandboxes.Destroy(r.Context(), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) stopSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.cfg.Sandboxes.Stop(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) startSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.cfg.Sandboxes.Start(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.cfg.Sandboxes.Pause(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := a.cfg.Sandboxes.Resume(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) keepalive(w http.ResponseWriter, r *http.Request) {
	var req api.KeepaliveRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	sb, err := a.cfg.Sandboxes.Keepalive(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}

func (a *API) setTimeout(w http.ResponseWriter, r *http.Request) {
	var req api.TimeoutRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	sb, err := a.cfg.Sandboxes.SetTimeout(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sb)
}
