package router

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/edge/forward"
)

// Apps is what the router needs of the apps layer (internal/control/apps.Service):
// an app by its host's name, and where a request to one of its roles goes.
type Apps interface {
	Host(ctx context.Context, name string) (*apps.Host, error)
	Target(ctx context.Context, h *apps.Host, role string) (apps.Route, error)
	Unreachable(sandboxID string)
}

var _ Apps = (*apps.Service)(nil)

// AppCookieName is the cookie a browser signs in to a private app with.
const AppCookieName = "hutch_app"

// appSessionTTL is how long an app sign-in lasts.
const appSessionTTL = 12 * time.Hour

// reservedPaths are the control plane's own: on an app's host they go to
// the API, never to a sandbox (and under /dev they answer 404).
var reservedPaths = []string{"/v1", "/auth", "/login", "/admin", "/provider"}

func reserved(p string) bool {
	for _, r := range reservedPaths {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// appName returns the app a Host names, "<name>.<apps domain>[:port]".
func (rt *Router) appName(host string) (string, bool) {
	if rt.cfg.Apps == nil {
		return "", false
	}
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	name, rest, ok := strings.Cut(h, ".")
	if !ok || rest != rt.appsDomain || !apps.ValidName(name) {
		return "", false
	}
	return name, true
}

// appSubject is what an app session is signed for.
func appSubject(appID string) Target { return Target{SandboxID: "app:" + appID} }

// serveApp answers a request on an app's host: the control plane's paths
// to next, /login to the sign-in, /dev/* to the dev sandbox with the
// prefix stripped, the rest to live.
func (rt *Router) serveApp(w http.ResponseWriter, r *http.Request, name string, next http.Handler) {
	p := r.URL.Path
	if p == "/login" {
		rt.appLogin(w, r, name)
		return
	}
	if reserved(p) {
		next.ServeHTTP(w, r)
		return
	}
	ex := &exchange{app: name, role: api.RoleLive}
	if p == "/dev" || strings.HasPrefix(p, "/dev/") {
		ex.role = api.RoleDev
	}
	rt.exchange(w, r, ex, "app request", rt.handleApp)
}

// handleApp finds the app, authorizes, picks the role's sandbox and
// proxies.
func (rt *Router) handleApp(w http.ResponseWriter, r *http.Request, ex *exchange) {
	a, err := rt.cfg.Apps.Host(r.Context(), ex.app)
	if err != nil {
		rt.log.Error("app: read app", "app", ex.app, "err", err)
		rt.fail(w, r, ex, pageInternal, "internal")
		return
	}
	r, ok := rt.authorizeApp(w, r, ex, a)
	if !ok {
		return
	}
	if a == nil {
		rt.fail(w, r, ex, pageAppNotFound, "not_found")
		return
	}
	// The request as it came is what another node is forwarded: the
	// owning node reads the role from the path itself.
	came := r
	if ex.role == api.RoleDev {
		u := *r.URL
		u.Path = strings.TrimPrefix(u.Path, "/dev")
		u.RawPath = ""
		if u.Path == "" {
			u.Path = "/"
		}
		if reserved(u.Path) {
			rt.fail(w, r, ex, pageReserved, "reserved_path")
			return
		}
		r2 := *r
		r2.URL = &u
		r = &r2
	}
	route, err := rt.cfg.Apps.Target(r.Context(), a, ex.role)
	switch {
	case errdefs.HasCode(err, "app_not_ready"):
		rt.fail(w, r, ex, pageAppNotReady, "app_not_ready")
		return
	case err != nil:
		rt.proxyError(w, r, err)
		return
	case route.Port == 0:
		rt.fail(w, r, ex, pageAppNoWeb, "no_web_process")
		return
	}
	ex.target = Target{SandboxID: route.Sandbox, Port: route.Port}
	if upgradeType(r.Header) != "" {
		rt.noteUpgrade(upgradeTarget{key: "app:" + a.ID + "/" + ex.role, tenantID: a.TenantID, sandboxID: route.Sandbox, port: route.Port,
			what: fmt.Sprintf("app %s (%s)", a.Name, ex.role)})
	}
	node := ""
	if rt.cfg.Forward != nil {
		pv, err := rt.find(r.Context(), ex.target)
		switch {
		case err != nil:
			rt.log.Error("app: read sandbox", "app", ex.app, "err", err)
			rt.fail(w, r, ex, pageInternal, "internal")
			return
		case pv == nil:
			rt.fail(w, r, ex, pageAppNotReady, "app_not_ready")
			return
		}
		node = pv.Node
	}
	rt.pass(w, came, r, ex, node)
}

// authorizeApp lets a request in to app a (nil when there is none: then
// only a credential learns so, as with previews): public apps to all;
// private ones to a key of the app's tenant or a browser signed in with
// one, while that key stands (grants.go). An unauthenticated browser is
// sent to /login, an API client gets 401.
func (rt *Router) authorizeApp(w http.ResponseWriter, r *http.Request, ex *exchange, a *apps.Host) (*http.Request, bool) {
	if a != nil && a.Public {
		ex.access = accessPublic
		return r, true
	}
	if hop, ok := forward.HopFrom(r.Context()); ok {
		tenantID := ""
		if a != nil {
			tenantID = a.TenantID
		}
		return rt.hopIn(w, r, ex, hop, tenantID, pageAppNotFound)
	}
	if key, ok := hutchKey(r.Header.Get("Authorization")); ok {
		g, err := rt.admitKey(r, key)
		if err != nil {
			rt.fail(w, r, ex, pageBadKey, "unauthorized")
			return nil, false
		}
		r = rt.serveAs(r, ex, g)
		if a == nil || g.p.TenantID != a.TenantID {
			rt.fail(w, r, ex, pageAppNotFound, "not_found")
			return nil, false
		}
		if readerRefused(g.p, r) {
			rt.fail(w, r, ex, pageReaderRefused, "forbidden")
			return nil, false
		}
		ex.access = accessKey
		return r, true
	}
	if a != nil && rt.cookieAllowed(r) {
		if keyID, ok := rt.appSession(r, a.ID); ok {
			if g := rt.admitSigned(r, keyID, a.TenantID); g != nil {
				return rt.signedIn(w, r, ex, g, accessCookie)
			}
		}
	}
	if wantsHTML(r) {
		ex.reason = "login_required"
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return nil, false
	}
	rt.fail(w, r, ex, pageAppPrivate, "unauthorized")
	return nil, false
}

// wantsHTML reports whether r is a browser's page load.
func wantsHTML(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && upgradeType(r.Header) == "" &&
		(isTopLevelNavigation(r) || strings.Contains(r.Header.Get("Accept"), "text/html"))
}

// appSession returns the key id of one of r's app cookies that is a
// session of app appID: the key that signed in, which the caller still
// checks (admitSigned).
func (rt *Router) appSession(r *http.Request, appID string) (keyID string, ok bool) {
	now := rt.cfg.Now()
	for _, c := range r.CookiesNamed(AppCookieName) {
		if keyID, ok := rt.sessions.valid(rt.sign, c.Value, appSubject(appID), now); ok {
			return keyID, true
		}
	}
	return "", false
}

var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in to {{.App}} · hutch</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:30em;margin:4em auto;padding:0 1em;color:#222}
input{font:inherit;width:100%;margin:.3em 0 1em;padding:.3em}.err{color:#a00}</style></head>
<body><h1>Sign in to {{.App}}</h1>
{{if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
<form method="post" action="/login"><label>API key of the app's tenant
<input type="password" name="key" autocomplete="off" autofocus></label>
<input type="hidden" name="next" value="{{.Next}}"><button type="submit">Sign in</button></form>
</body></html>
`))

// appLogin serves /login on an app's host: a form for an API key of the
// app's tenant, which, once checked, leaves a session cookie for this host,
// good while that key stands, and goes back to next.
func (rt *Router) appLogin(w http.ResponseWriter, r *http.Request, name string) {
	next := r.FormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		next = "/"
	}
	show := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		loginTemplate.Execute(w, struct{ App, Next, Error string }{name, next, msg})
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		show(http.StatusOK, "")
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !rt.sameOrigin(r, o) {
		show(http.StatusForbidden, "This sign-in came from another site.")
		return
	}
	a, err := rt.cfg.Apps.Host(r.Context(), name)
	if err != nil {
		show(http.StatusInternalServerError, "The sign-in failed on the server's side.")
		return
	}
	key, ok := hutchKey("Bearer " + strings.TrimSpace(r.PostFormValue("key")))
	var g *grant
	if ok {
		g, err = rt.admitKey(r, key)
	}
	if !ok || err != nil || a == nil || g.p.TenantID != a.TenantID {
		if g != nil {
			rt.releaseGrant(g)
		}
		show(http.StatusUnauthorized, "That key does not open this app.")
		return
	}
	rt.releaseGrant(g)
	exp := rt.cfg.Now().Add(appSessionTTL)
	http.SetCookie(w, &http.Cookie{Name: AppCookieName, Value: rt.sign.sign(purposeSession, appSubject(a.ID), g.p.KeyID, exp), Path: "/",
		Expires: exp, MaxAge: int(appSessionTTL / time.Second), HttpOnly: true, Secure: rt.scheme(r) == "https", SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// appUnreachable is the proxy's hook for an app whose port was closed:
// its supervisor is checked again on the next request.
func (rt *Router) appUnreachable(ex *exchange, err error) {
	if ex.app != "" && rt.cfg.Apps != nil && (errdefs.HasCode(err, "port_closed") || errors.Is(err, errdefs.ErrConflict)) {
		rt.cfg.Apps.Unreachable(ex.target.SandboxID)
	}
}

var (
	pageAppNotFound = page{http.StatusNotFound, "app_not_found", "No such app", "There is no app on this host.", false}
	pageAppPrivate  = page{http.StatusUnauthorized, "app_private", "This app is private",
		"This app is private. Send an API key of its tenant, or sign in at /login.", false}
	pageAppNotReady = page{http.StatusServiceUnavailable, "app_not_ready", "The app is not ready",
		"The app is still being created, or it failed (GET /v1/apps/{id} says which).", true}
	pageAppNoWeb = page{http.StatusNotFound, "no_web_process", "This app serves no web pages",
		"The app's sandbox.yaml names no web process.", false}
	pageReserved = page{http.StatusNotFound, "reserved_path", "This path is the control plane's",
		"/v1, /auth, /login, /admin and /provider belong to hutch on every app host, under /dev too: an app cannot serve them.", false}
)
