package router

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// URL is the preview address of t for a client that reached the server
// with req (an API request): the public URL's scheme and port when one is
// configured, otherwise req's scheme and the port of req's Host, if it
// names one; and t's preview host.
func (rt *Router) URL(req *http.Request, t Target) string {
	host := t.Host(rt.domain)
	port := ""
	if rt.public != nil {
		port = rt.public.Port()
	} else if _, p, err := net.SplitHostPort(req.Host); err == nil {
		port = p
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return rt.scheme(req) + "://" + host + "/"
}

// scheme is how clients reach previews: the public URL's scheme, or the
// request's own.
func (rt *Router) scheme(r *http.Request) string {
	switch {
	case rt.public != nil:
		return rt.public.Scheme
	case r.TLS != nil:
		return "https"
	}
	return "http"
}

// SignedURL is URL with a token minted by key keyID (the caller's) that
// lets its holder in until the expiry it returns, ttl from now,
// DefaultURLTTL when ttl is zero, and only while that key is not revoked.
// A ttl below a second or above MaxURLTTL is an ErrInvalid error.
func (rt *Router) SignedURL(req *http.Request, t Target, keyID string, ttl time.Duration) (string, time.Time, error) {
	if ttl == 0 {
		ttl = DefaultURLTTL
	}
	if ttl < time.Second || ttl > MaxURLTTL {
		return "", time.Time{}, errdefs.Invalid("invalid_expiry", "a signed URL lives from 1 s to %s", MaxURLTTL)
	}
	if !validKeyID(keyID) {
		return "", time.Time{}, fmt.Errorf("preview: a signed URL needs the id of the key that mints it, not %q", keyID)
	}
	exp := rt.cfg.Now().Add(ttl).Truncate(time.Second)
	return rt.URL(req, t) + "?" + TokenParam + "=" + rt.sign.sign(purposeURL, t, keyID, exp), exp, nil
}
