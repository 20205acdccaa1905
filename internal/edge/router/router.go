// Package router serves previews: a request whose Host is
// "<port>-<sandbox id>.<preview domain>" reaches 127.0.0.1:<port> inside
// that sandbox, through a tunnel its agent opens (internal/agent/tunnel,
// GET /tunnel/{port}). HTTP, streamed responses (unbuffered) and WebSocket
// upgrades all pass.
//
// The sandbox service resolves the sandbox from the host alone, as the
// system (sandbox.Service.Preview: its tenant, its state, whether the
// port is public); then the request is authorized: a public port lets
// everyone in; a private one (the default) wants an API key of the
// sandbox's tenant, a signed URL (?hutch_token=, made by POST
// /v1/sandboxes/{id}/ports/{port}/url) or the cookie such a URL leaves,
// scoped to the preview's host and accepted only on requests from the
// preview's own pages and on top-level navigations (cookie.go: sibling
// previews share a site). A signed URL and its cookie name the key that
// minted them (token.go) and act as that key, so its revocation ends
// them. Another tenant's key sees 404, as for a sandbox that does not
// exist. None of these credentials reaches the sandbox's program.
//
// Per request it reads no store and hashes no key while a preview is busy:
// what it read of the sandbox is kept a second (lookup.go), a key's check
// 5 s, also the check of the key a URL or cookie names (grants.go, which
// says how a revocation still ends its requests at once), a cookie's
// signature until it expires (cookie.go); and a page's requests go over
// pooled tunnels without goroutine hand-offs (tunnels.go).
//
// Lifecycle: a key (keyfile.Load), then New (no side effects), Wrap around the API's
// handler, Close at shutdown to drop idle tunnels and the keys' grants.
package router

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/deadline"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/router/previewhost"
)

// Names the router reads from requests and strips before forwarding.
const (
	TokenParam        = "hutch_token" // a signed URL's token
	RetryParam        = "hutch_retry" // how many times the "not running" page reloaded
	CookieName        = "hutch_preview"
	DefaultMaxRetries = 10
	retryAfter        = 2 // seconds, in Retry-After and the page's reload
)

// KeyAuthenticator resolves an Authorization header, or the id of the key
// that minted a signed URL or cookie, to a principal
// (internal/control/auth.Authenticator, the one the API uses).
type KeyAuthenticator interface {
	// Begin returns ctx carrying the principal, ended as soon as the key
	// is revoked, and end, which releases it once the request is done.
	Begin(ctx context.Context, header string) (_ context.Context, end func(), _ error)
	// BeginKey is Begin for key id, which the router signed a token for:
	// it fails once the key is revoked.
	BeginKey(ctx context.Context, id string) (_ context.Context, end func(), _ error)
}

// Dialer opens a connection to a port of a running sandbox. ctx bounds
// the dial only.
type Dialer interface {
	DialTunnel(ctx context.Context, sandboxID string, port int) (net.Conn, error)
}

var _ Dialer = (*sandbox.Service)(nil)

// DialFunc is a Dialer.
type DialFunc func(ctx context.Context, sandboxID string, port int) (net.Conn, error)

// DialTunnel calls f.
func (f DialFunc) DialTunnel(ctx context.Context, sandboxID string, port int) (net.Conn, error) {
	return f(ctx, sandboxID, port)
}

// Config is what the router serves from.
type Config struct {
	// Domain is the preview domain ("localhost": every browser resolves
	// *.localhost to the loopback, so no DNS is needed).
	Domain string
	// Key signs preview URLs and cookies (keyfile.Load); KeyBytes at least.
	Key []byte
	// Sandboxes resolves a preview's sandbox and port: the sandbox
	// service (internal/control/sandbox.Service.Preview).
	Sandboxes sandbox.Previews
	Auth      KeyAuthenticator
	// Tunnels dials a sandbox's port: the sandbox service
	// (internal/control/sandbox.Service.DialTunnel), the only door to a sandbox.
	Tunnels Dialer
	Log     *slog.Logger
	// MaxRetries bounds how often the "not running" page reloads itself;
	// zero means DefaultMaxRetries.
	MaxRetries int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Events, if set, records reconnect storms (storm.go).
	Events events.Appender
	// PublicURL, when a proxy in front of hutch (one that ends TLS, say)
	// is what clients reach, is its scheme and port, as a URL whose host
	// is the preview domain: "https://preview.example.com". Preview links,
	// the cookie's Secure flag and the same-origin check use it. Empty:
	// the scheme and port each request came with.
	PublicURL string
	// Apps, if set, serves apps at <name>.<AppsDomain> (apps.go).
	Apps Apps
	// AppsDomain is the apps domain; empty means Domain.
	AppsDomain string
	// Forward carries a request for a sandbox another node runs to that
	// node once this one let it in (forward.go); nil: every sandbox is
	// this node's.
	Forward *forward.Forwarder
}

// Router is the preview handler. It is safe for concurrent use.
type Router struct {
	cfg      Config
	log      *slog.Logger
	domain   string
	sign     signer
	tr       *tunnelTransport
	proxy    *httputil.ReverseProxy
	cache    lookups  // lookup.go
	grants   grants   // grants.go
	sessions verified // cookie.go
	storms   storms   // storm.go
	public   *url.URL // Config.PublicURL, nil when unset

	appsDomain string
}

// New checks cfg and builds the router.
func New(cfg Config) (*Router, error) {
	if err := previewhost.ValidDomain(cfg.Domain); err != nil {
		return nil, err
	}
	switch {
	case len(cfg.Key) < KeyBytes:
		return nil, errors.New("router: the signing key is too short")
	case cfg.Sandboxes == nil || cfg.Auth == nil || cfg.Tunnels == nil:
		return nil, errors.New("router: Sandboxes, Auth and Tunnels must be set")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rt := &Router{cfg: cfg, log: cfg.Log, domain: strings.ToLower(cfg.Domain), sign: signer{key: cfg.Key}}
	if cfg.PublicURL != "" {
		u, err := previewhost.ParsePublicURL(cfg.PublicURL, cfg.Domain)
		if err != nil {
			return nil, err
		}
		rt.public = u
	}
	if msg := plainHTTPWarning(rt.domain, rt.public); msg != "" {
		rt.log.Warn(msg, "preview_domain", rt.domain)
	}
	rt.appsDomain = strings.ToLower(cfg.AppsDomain)
	if rt.appsDomain == "" {
		rt.appsDomain = rt.domain
	} else if err := previewhost.ValidDomain(rt.appsDomain); err != nil {
		return nil, fmt.Errorf("apps domain: %w", err)
	}
	rt.tr, rt.proxy = rt.newProxy()
	return rt, nil
}

// Domain is the preview domain, lowercase.
func (rt *Router) Domain() string { return rt.domain }

// Close drops the idle tunnels the proxy keeps for reuse and the API keys'
// grants.
func (rt *Router) Close() {
	rt.tr.CloseIdleConnections()
	rt.grants.closeAll()
}

// Wrap returns the server's handler: requests for a preview host go to
// the router, the rest to next.
func (rt *Router) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, err := ParseHost(r.Host, rt.domain); err == nil {
			rt.serve(w, r, t)
			return
		}
		if name, ok := rt.appName(r.Host); ok {
			rt.serveApp(w, r, name, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// access is how a request was let in, for the log.
type access string

const (
	accessPublic access = "public"
	accessKey    access = "key"
	accessCookie access = "cookie"
	accessToken  access = "token"
)

// exchange is one preview request as the log reports it.
type exchange struct {
	target Target
	access access
	reason string // why it failed: a class, not a message
	// release, when set, is called once the request is done: it lets go
	// of what authorize holds for it (an API key's grant).
	release func()
	// app and role are set for a request to an app's host (apps.go).
	app, role string
	// keyID is the key that let the request in (serveAs), which a
	// forwarded request is served as on the sandbox's node.
	keyID string
}

type exchangeKey struct{}

// serve answers one preview request and logs it.
func (rt *Router) serve(w http.ResponseWriter, r *http.Request, t Target) {
	rt.exchange(w, r, &exchange{target: t}, "preview request", rt.handle)
}

// exchange answers one request of a preview or an app with handle and
// logs it as msg: method, path (as the client sent it), target, status,
// duration, how it was let in, an upgrade and why it failed.
func (rt *Router) exchange(w http.ResponseWriter, r *http.Request, ex *exchange, msg string, handle func(http.ResponseWriter, *http.Request, *exchange)) {
	start := time.Now()
	// An app's responses stream and its WebSockets last: the server's
	// request timeout is for the API's own requests.
	deadline.Lift(w)
	rec := &recorder{ResponseWriter: w}
	handle(rec, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex)), ex)
	if ex.release != nil {
		ex.release()
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	upgrade := upgradeType(r.Header)
	if upgrade != "" && status != http.StatusSwitchingProtocols && ex.reason == "" {
		ex.reason = "backend_refused_upgrade"
	}
	if !rt.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	var buf [12]slog.Attr // on the stack: a line per request allocates little
	attrs := append(buf[:0], slog.String("method", r.Method), slog.String("path", r.URL.Path), logattr.Sandbox(ex.target.SandboxID),
		slog.Int("port", ex.target.Port), slog.Int("status", status), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	if ex.app != "" {
		attrs = append(attrs, slog.String("app", ex.app), slog.String("role", ex.role))
	}
	if ex.access != "" {
		attrs = append(attrs, slog.String("access", string(ex.access)))
	}
	if upgrade != "" {
		attrs = append(attrs, slog.String("upgrade", upgrade))
	}
	if ex.reason != "" {
		attrs = append(attrs, slog.String("reason", ex.reason))
	}
	rt.log.LogAttrs(r.Context(), slog.LevelInfo, msg, attrs...)
}

// handle finds the sandbox, authorizes, and proxies.
func (rt *Router) handle(w http.ResponseWriter, r *http.Request, ex *exchange) {
	t := ex.target
	pv, err := rt.find(r.Context(), t)
	if err != nil {
		rt.log.Error("preview: read sandbox", logattr.Sandbox(t.SandboxID), "err", err)
		rt.fail(w, r, ex, pageInternal, "internal")
		return
	}
	r, ok := rt.authorize(w, r, ex, pv)
	if !ok {
		return
	}
	switch {
	case pv == nil || pv.State == api.StateDestroyed:
		rt.fail(w, r, ex, pageNotFound, "not_found")
	case pv.State == api.StateFailed:
		rt.fail(w, r, ex, pageFailed, "sandbox_failed")
	case !pv.Reachable(): // a paused one resumes at its tunnel
		rt.fail(w, r, ex, pageNotRunning, "not_running")
	default:
		if ex.access == accessToken && isTopLevelNavigation(r) {
			// Take the token out of the address bar and history; the
			// cookie set with this answer lets the browser back in.
			u := *r.URL
			u.RawQuery = stripQuery(u.RawQuery, TokenParam)
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if upgradeType(r.Header) != "" {
			rt.noteUpgrade(upgradeTarget{key: t.SandboxID, tenantID: pv.TenantID, sandboxID: t.SandboxID, port: t.Port, what: fmt.Sprintf("port %d", t.Port)})
		}
		rt.pass(w, r, r, ex, pv.Node)
	}
}

// authorize lets the request in, returning the request to proxy, or
// answers it. pv is nil when the sandbox does not exist; without
// credentials that answers 401 like a private port, so an anonymous caller
// cannot tell the two apart. A request an API key let in, or a signed URL
// or cookie that key minted, is proxied with a context that ends when the
// key is revoked (KeyAuthenticator.Begin, held by the key's grant:
// grants.go), so its stream or WebSocket ends with the key; and a revoked
// key's URL or cookie lets nothing more in.
//
// Every request is authorized on its own, also the second of a kept-alive
// connection: what is cached is what a credential proves (a key's
// principal, grants.go; a cookie's signature, cookie.go), never that a
// connection was let in once. A connection can carry requests with other
// credentials, and a browser may send a sibling preview's fetch() on the
// connection a top-level page opened, which the cookie must refuse.
func (rt *Router) authorize(w http.ResponseWriter, r *http.Request, ex *exchange, pv *sandbox.Preview) (*http.Request, bool) {
	t := ex.target
	if pv != nil && pv.Public {
		ex.access = accessPublic
		return r, true
	}
	tenantID := ""
	if pv != nil {
		tenantID = pv.TenantID
	}
	if hop, ok := forward.HopFrom(r.Context()); ok {
		return rt.hopIn(w, r, ex, hop, tenantID, pageNotFound)
	}
	if key, ok := hutchKey(r.Header.Get("Authorization")); ok {
		// The key's check is cached for grantTTL (grants.go); revoking
		// the key ends the grant and every request it let in.
		g, err := rt.admitKey(r, key)
		if err != nil {
			rt.fail(w, r, ex, pageBadKey, "unauthorized")
			return nil, false
		}
		r = rt.serveAs(r, ex, g)
		if pv == nil || g.p.TenantID != pv.TenantID {
			rt.fail(w, r, ex, pageNotFound, "not_found")
			return nil, false
		}
		if readerRefused(g.p, r) {
			rt.fail(w, r, ex, pageReaderRefused, "forbidden")
			return nil, false
		}
		ex.access = accessKey
		return r, true
	}
	now := rt.cfg.Now()
	cookieRefused := false
	if keyID, ok := rt.session(r, t, now); ok {
		if !rt.cookieAllowed(r) {
			cookieRefused = true // unless the URL carries a token
		} else if g := rt.admitSigned(r, keyID, tenantID); g != nil {
			return rt.signedIn(w, r, ex, g, accessCookie)
		}
	}
	if tok := r.URL.Query().Get(TokenParam); tok != "" {
		keyID, exp, err := rt.sign.verify(purposeURL, tok, t, now)
		var g *grant
		if err == nil {
			g = rt.admitSigned(r, keyID, tenantID)
		}
		if g == nil {
			rt.fail(w, r, ex, pageBadToken, "unauthorized")
			return nil, false
		}
		r, ok := rt.signedIn(w, r, ex, g, accessToken)
		if !ok {
			return nil, false
		}
		http.SetCookie(w, &http.Cookie{
			Name:     CookieName,
			Value:    rt.sign.sign(purposeSession, t, keyID, exp),
			Path:     "/",
			Expires:  exp,
			MaxAge:   int(exp.Sub(now).Seconds()) + 1,
			HttpOnly: true,
			Secure:   rt.scheme(r) == "https",
			SameSite: http.SameSiteLaxMode,
		})
		return r, true
	}
	if cookieRefused {
		rt.fail(w, r, ex, pageCookieRefused, "cookie_refused")
		return nil, false
	}
	rt.fail(w, r, ex, pagePrivate, "unauthorized")
	return nil, false
}

// admitSigned grants r, which carries a token that key id minted, as
// that key (grants.go), or returns nil: the key was revoked, or is not of
// tenantID ("": the resource does not exist, which the caller answers).
func (rt *Router) admitSigned(r *http.Request, keyID, tenantID string) *grant {
	g, err := rt.admitKeyID(r, keyID)
	if err != nil {
		return nil
	}
	if tenantID != "" && g.p.TenantID != tenantID {
		rt.releaseGrant(g)
		return nil
	}
	return g
}

// signedIn lets r in as g's key by a token or cookie that key minted, as
// access, or answers it: a read-only key's token views only, as the key
// itself does.
func (rt *Router) signedIn(w http.ResponseWriter, r *http.Request, ex *exchange, g *grant, access access) (*http.Request, bool) {
	r = rt.serveAs(r, ex, g)
	if readerRefused(g.p, r) {
		rt.fail(w, r, ex, pageReaderRefused, "forbidden")
		return nil, false
	}
	ex.access = access
	return r, true
}

// readerRefused reports whether p may not make r because p's key only
// reads: a method that may change the app's state, or a WebSocket.
func readerRefused(p tenancy.Principal, r *http.Request) bool {
	return !p.Holds(api.RoleMember) && (!readOnlyMethod(r.Method) || upgradeType(r.Header) != "")
}

// origin is the request's own origin: the preview's scheme and host.
func (rt *Router) origin(r *http.Request) string {
	return rt.scheme(r) + "://" + r.Host
}

// hutchKey returns the API key of a "Bearer hk_…" header.
func hutchKey(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(tok, "hk_") {
		return "", false
	}
	return tok, true
}

// recorder remembers the status for the log. It hijacks (WebSocket) and
// flushes (streams) through to the server's writer.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return c, brw, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// readOnlyMethod reports whether method only reads, by HTTP's rules.
func readOnlyMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}
