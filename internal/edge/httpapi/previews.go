package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/router"
)

// The preview routes: signed URLs and public ports, from the preview
// router the server hands the API (Config.Previews); a server without one
// answers 501.

// withPreviews resolves the router and the sandbox and port in the path,
// or answers the error.
func (a *API) withPreviews(w http.ResponseWriter, r *http.Request, withPort bool) (Previews, router.Target, bool) {
	rt := a.cfg.Previews
	if rt == nil {
		a.writeError(w, r, errdefs.New(errdefs.ErrUnsupported, "previews_unsupported", "this server does not serve previews"))
		return nil, router.Target{}, false
	}
	t := router.Target{SandboxID: r.PathValue("id")}
	if withPort {
		p := r.PathValue("port")
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			a.writeError(w, r, errdefs.Invalid("invalid_port", "%q is not a port from 1 to 65535", p))
			return nil, router.Target{}, false
		}
		t.Port = n
	}
	return rt, t, true
}

// previewURL answers POST /v1/sandboxes/{id}/ports/{port}/url: a signed
// URL of the port's preview, an hour by default, good while the caller's
// key is not revoked (it names the key).
func (a *API) previewURL(w http.ResponseWriter, r *http.Request) {
	var req api.PreviewURLRequest
	if r.ContentLength != 0 {
		if err := a.decodeJSON(w, r, &req); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	maxS := int(router.MaxURLTTL / time.Second)
	if req.ExpiresInS < 0 || req.ExpiresInS > maxS {
		a.writeError(w, r, errdefs.Invalid("invalid_expiry", "expires_in_s must be from 1 to %d (0: an hour)", maxS))
		return
	}
	rt, t, ok := a.withPreviews(w, r, true)
	if !ok {
		return
	}
	if err := a.cfg.Sandboxes.Check(r.Context(), t.SandboxID); err != nil {
		a.writeError(w, r, err)
		return
	}
	p, _ := tenancy.From(r.Context())
	u, exp, err := rt.SignedURL(r, t, p.KeyID, time.Duration(req.ExpiresInS)*time.Second)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.PreviewURL{URL: u, ExpiresAt: exp.UTC()})
}

// setPort answers PUT /v1/sandboxes/{id}/ports/{port}: {"public": true}
// lets everyone reach the preview, false makes it private again.
func (a *API) setPort(w http.ResponseWriter, r *http.Request) {
	var req api.PortRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if req.Public == nil {
		a.writeError(w, r, errdefs.Invalid("invalid_request", `the body must set "public" to true or false`))
		return
	}
	rt, t, ok := a.withPreviews(w, r, true)
	if !ok {
		return
	}
	p, err := a.cfg.Sandboxes.SetPort(r.Context(), t.SandboxID, t.Port, *req.Public)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	rt.Forget(t.SandboxID)
	writeJSON(w, http.StatusOK, portOf(rt, r, t.SandboxID, p))
}

// listPorts answers GET /v1/sandboxes/{id}/ports: the ports with a
// setting and the ports listening in the sandbox, in port order. When
// what listens cannot be known (the sandbox is stopped, its agent is too
// old, it has no network of its own, the agent fails), the settings come
// without it and listening_error says why: the list of settings is never
// refused for it.
func (a *API) listPorts(w http.ResponseWriter, r *http.Request) {
	rt, t, ok := a.withPreviews(w, r, false)
	if !ok {
		return
	}
	ps, err := a.cfg.Sandboxes.Ports(r.Context(), t.SandboxID)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := api.PortList{Ports: make([]api.Port, 0, len(ps))}
	for _, p := range ps {
		out.Ports = append(out.Ports, portOf(rt, r, t.SandboxID, p))
	}
	ls, err := a.cfg.Sandboxes.ListeningPorts(r.Context(), t.SandboxID)
	switch {
	case err == nil:
		out.Ports = withListening(rt, r, t.SandboxID, out.Ports, ls)
	case r.Context().Err() != nil:
		return
	default:
		status, code, msg := errdefs.HTTPStatus(err)
		if status >= 500 && status != http.StatusNotImplemented {
			a.cfg.Log.Warn("list ports: what listens is unknown", logattr.Sandbox(t.SandboxID), "code", code, "err", err)
		}
		out.ListeningError = &api.ErrorBody{Code: code, Message: msg}
	}
	writeJSON(w, http.StatusOK, out)
}

// withListening marks each of ps listening or not, adds the ports that
// listen without a setting, and keeps the list in port order.
func withListening(rt Previews, r *http.Request, id string, ps []api.Port, ls []sandbox.Listener) []api.Port {
	at := make(map[int]int, len(ps)) // port → its index in ps
	for i := range ps {
		ps[i].Listening = new(false)
		at[ps[i].Port] = i
	}
	for _, l := range ls {
		i, ok := at[l.Port]
		if !ok {
			i = len(ps)
			ps = append(ps, api.Port{Port: l.Port, URL: rt.URL(r, router.Target{SandboxID: id, Port: l.Port})})
			at[l.Port] = i
		}
		ps[i].Listening = new(true)
		ps[i].Addresses = append(ps[i].Addresses, l.Addresses...)
	}
	slices.SortFunc(ps, func(a, b api.Port) int { return cmp.Compare(a.Port, b.Port) })
	return ps
}

// portOf is the setting p of a port of sandbox id as the API shows it.
func portOf(rt Previews, r *http.Request, id string, p sandbox.PortSetting) api.Port {
	return api.Port{
		Port:       p.Port,
		Public:     p.Public,
		URL:        rt.URL(r, router.Target{SandboxID: id, Port: p.Port}),
		Configured: true,
		UpdatedAt:  p.UpdatedAt,
	}
}
