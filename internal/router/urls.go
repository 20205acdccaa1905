package router

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
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

// ParsePublicURL checks a public URL for previews: http or https, the
// preview domain as its host (any port), nothing else.
func ParsePublicURL(raw, domain string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, fmt.Errorf("preview URL %q must be an http or https URL", raw)
	case !strings.EqualFold(u.Hostname(), domain):
		return nil, fmt.Errorf("preview URL %q must have the preview domain %q as its host", raw, domain)
	case u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("preview URL %q must be a scheme, the preview domain and a port at most", raw)
	}
	return u, nil
}

// SignedURL is URL with a token that lets its holder in until the expiry
// it returns: ttl from now, DefaultURLTTL when ttl is zero. A ttl below a
// second or above MaxURLTTL is an error.
func (rt *Router) SignedURL(req *http.Request, t Target, ttl time.Duration) (string, time.Time, error) {
	if ttl == 0 {
		ttl = DefaultURLTTL
	}
	if ttl < time.Second || ttl > MaxURLTTL {
		return "", time.Time{}, fmt.Errorf("a signed URL lives from 1 s to %s", MaxURLTTL)
	}
	exp := rt.cfg.Now().Add(ttl).Truncate(time.Second)
	return rt.URL(req, t) + "?" + TokenParam + "=" + rt.sign.sign(purposeURL, t, exp), exp, nil
}
