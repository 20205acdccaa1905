package router

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// URL is the preview address of t for a client that reached the server
// with req (an API request): req's scheme, t's preview host, and the port
// of req's Host, if it names one.
func (rt *Router) URL(req *http.Request, t Target) string {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	host := t.Host(rt.domain)
	if _, port, err := net.SplitHostPort(req.Host); err == nil && port != "" {
		host = net.JoinHostPort(host, port)
	}
	return scheme + "://" + host + "/"
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
