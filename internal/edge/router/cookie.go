package router

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The preview cookie is host-only, HttpOnly and SameSite=Lax, which does
// not stop a sibling preview: every preview sits under one preview domain,
// so on a custom domain they share a site, and a page of one sandbox's
// preview can fetch(), frame or embed another's with the visitor's cookie.
// Host-only scope only keeps the cookie from being sent to the sibling
// itself. So the cookie authenticates a request only when the browser
// shows where the request came from, by one of:
//
//	Sec-Fetch-Site: same-origin                  the preview's own page
//	Sec-Fetch-Mode: navigate, -Dest: document    a top-level navigation (a
//	(GET or HEAD, no upgrade)                    link, a typed address)
//	no Sec-Fetch-*, Origin: the preview's own    its page's POST or WebSocket
//	no Sec-Fetch-*, no Origin, Referer on the    its page's GET
//	preview's own origin
//
// and never when an Origin of another origin comes with it. Browsers send
// Sec-Fetch-* only to potentially trustworthy origins: HTTPS, and
// http://*.localhost. Over plain HTTP on a custom domain they send none,
// so there a typed or bookmarked address needs a new signed link; HTTPS
// (Config.PublicURL) is the way to serve a custom domain.

// session returns the key id of one of r's preview cookies that is a
// session of t valid at now: the key that minted the signed URL which
// left it, which the caller still checks (admitSigned). A sibling preview
// can set a cookie of the same name for the whole preview domain; it does
// not shadow this host's.
func (rt *Router) session(r *http.Request, t Target, now time.Time) (keyID string, ok bool) {
	for _, c := range r.CookiesNamed(CookieName) {
		if keyID, ok := rt.sessions.valid(rt.sign, c.Value, t, now); ok {
			return keyID, true
		}
	}
	return "", false
}

// maxVerified bounds the sessions remembered as verified; past it,
// expired ones are dropped, and then nothing more is remembered.
const maxVerified = 4096

// verifiedKey is a session cookie's value for a target.
type verifiedKey struct {
	token string
	t     Target
}

// verifiedSession is what a session cookie's signature proved.
type verifiedSession struct {
	keyID string
	exp   time.Time
}

// verified remembers the session cookies whose signature checked, until
// their expiry, so a browser's requests do not each compute an HMAC. A
// signature is a function of the token, the target and the router's key,
// which does not change while the router runs, so the answer cannot go
// stale before the token expires. Whether the key that minted it still
// stands is not remembered here: the grant of its key id says
// (grants.go). The zero value is ready.
type verified struct {
	mu sync.Mutex
	m  map[verifiedKey]verifiedSession
}

// valid reports whether tok is a session of t at now, and the key id
// that minted it.
func (v *verified) valid(s signer, tok string, t Target, now time.Time) (string, bool) {
	k := verifiedKey{tok, t}
	v.mu.Lock()
	vs, ok := v.m[k]
	v.mu.Unlock()
	if ok {
		return vs.keyID, now.Before(vs.exp)
	}
	keyID, exp, err := s.verify(purposeSession, tok, t, now)
	if err != nil {
		return "", false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[verifiedKey]verifiedSession{}
	}
	if len(v.m) >= maxVerified {
		for k, vs := range v.m {
			if !now.Before(vs.exp) {
				delete(v.m, k)
			}
		}
	}
	if len(v.m) < maxVerified {
		v.m[k] = verifiedSession{keyID, exp}
	}
	return keyID, true
}

// cookieAllowed reports whether the preview cookie may let r in: r comes
// from the preview's own pages, or is a top-level navigation (the table
// above).
func (rt *Router) cookieAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && origin != "null" && !rt.sameOrigin(r, origin) {
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || isTopLevelNavigation(r)
	}
	switch origin {
	case "null": // an opaque origin: a sandboxed frame, a redirect through elsewhere
		return false
	case "":
		ref := r.Header.Get("Referer")
		return ref != "" && rt.sameOrigin(r, ref)
	}
	return true
}

// isTopLevelNavigation reports whether a browser with Fetch Metadata is
// loading a page into a tab (not a frame, a script's fetch, nor a
// WebSocket).
func isTopLevelNavigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document" &&
		(r.Method == http.MethodGet || r.Method == http.MethodHead) && upgradeType(r.Header) == ""
}

// sameOrigin reports whether the URL raw (an Origin or a Referer) is on
// r's own origin: the preview's scheme, host and port.
func (rt *Router) sameOrigin(r *http.Request, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := rt.scheme(r)
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withPort(u.Host, scheme), withPort(r.Host, scheme))
}

// withPort is host with the scheme's default port when it names none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(host, "443")
	}
	return net.JoinHostPort(host, "80")
}

// plainHTTPWarning says, when previews are served on a custom domain over
// plain HTTP, what is and is not protected there; "" otherwise.
func plainHTTPWarning(domain string, public *url.URL) string {
	if domain == "localhost" || strings.HasSuffix(domain, ".localhost") || public != nil && public.Scheme == "https" {
		return ""
	}
	return "previews: plain HTTP on a custom preview domain: browsers send no Fetch Metadata to it, so a private " +
		"preview's cookie is accepted only on requests its own pages make (an Origin or Referer of its own); " +
		"typed or bookmarked addresses need a new signed link, and apps that send no Referer lose the cookie. " +
		"Serve previews over HTTPS behind a proxy and set --preview-url https://" + domain
}
