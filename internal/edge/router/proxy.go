package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// Bounds of the proxy's tunnels, in each of its two pools (tunnels.go).
const (
	dialTimeout     = 10 * time.Second
	idleTunnels     = 256 // kept per sandbox port
	idleTunnelsAll  = 1024
	idleTunnelAfter = 60 * time.Second
)

// tunnelSuffix ends the outbound URL host, "<port>-<sandbox id>.sandbox",
// which the transport hands its dialer and keys its pool of tunnels by.
const tunnelSuffix = ".sandbox"

// newProxy builds the reverse proxy: its transport dials a tunnel per
// connection and keeps idle ones for reuse (tunnels.go); streamed
// responses (event streams, and any body of unknown length) are flushed
// write by write, which ReverseProxy does by itself, while a body of known
// length goes out in full buffers; upgrades (WebSocket) pass through;
// compression is left to the two ends.
func (rt *Router) newProxy() (*tunnelTransport, *httputil.ReverseProxy) {
	tr := &tunnelTransport{rt: rt, std: &http.Transport{
		DialContext:            rt.dialTunnel,
		DisableCompression:     true,
		MaxIdleConns:           idleTunnelsAll,
		MaxIdleConnsPerHost:    idleTunnels,
		IdleConnTimeout:        idleTunnelAfter,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHead,
		ForceAttemptHTTP2:      false,
	}}
	return tr, &httputil.ReverseProxy{
		Rewrite:      rt.rewrite,
		Transport:    tr,
		ErrorHandler: rt.proxyError,
		ErrorLog:     slog.NewLogLogger(rt.log.Handler(), slog.LevelDebug),
		BufferPool:   copyBuffers{},
	}
}

// copyBuffers lends the proxy the buffers it copies bodies with: without
// them it makes one of 32 KiB per request, most of what a small answer
// allocates.
type copyBuffers struct{}

const copyBufferSize = 32 << 10

var copyBufferPool = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[copyBufferSize]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == copyBufferSize {
		copyBufferPool.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}

func tunnelHost(t Target) string {
	return strconv.Itoa(t.Port) + "-" + t.SandboxID + tunnelSuffix
}

func (rt *Router) dialTunnel(ctx context.Context, _, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	t, err := ParseHost(strings.TrimSuffix(host, tunnelSuffix)+"."+rt.domain, rt.domain)
	if err != nil || !strings.HasSuffix(host, tunnelSuffix) {
		return nil, fmt.Errorf("router: %q is not a tunnel address", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return rt.cfg.Tunnels.DialTunnel(ctx, t.SandboxID, t.Port)
}

// rewrite aims the request at the tunnel and takes hutch's credentials out
// of it. The Host header stays the preview's (dev servers check it);
// X-Forwarded-For, -Host and -Proto are set anew (ReverseProxy drops the
// caller's).
func (rt *Router) rewrite(pr *httputil.ProxyRequest) {
	ex := exchangeOf(pr.In)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = tunnelHost(ex.target)
	pr.Out.URL.RawQuery = stripQuery(pr.Out.URL.RawQuery, TokenParam, RetryParam)
	pr.SetXForwarded()
	stripKeys(pr.Out.Header)
	stripCookie(pr.Out.Header, CookieName)
	stripRefererToken(pr.Out.Header)
	if ex.app != "" {
		stripCookie(pr.Out.Header, AppCookieName)
		if ex.role == api.RoleDev {
			pr.Out.Header.Set("X-Forwarded-Prefix", "/dev")
		}
	}
}

// stripRefererToken takes a signed URL's token out of the Referer: a page
// opened with one keeps it in its address where the browser sends no
// Fetch Metadata (nothing tells the router it may redirect), and the
// page's own requests name that address.
func stripRefererToken(h http.Header) {
	ref := h.Get("Referer")
	if !mayHoldParam(ref, TokenParam) {
		return
	}
	u, err := url.Parse(ref)
	if err != nil || u.RawQuery == "" {
		return
	}
	if q := stripQuery(u.RawQuery, TokenParam); q != u.RawQuery {
		u.RawQuery = q
		h.Set("Referer", u.String())
	}
}

func exchangeOf(r *http.Request) *exchange {
	if ex, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
		return ex
	}
	return &exchange{}
}

// proxyError answers a request the proxy could not carry.
func (rt *Router) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	ex := exchangeOf(r)
	rt.appUnreachable(ex, err)
	switch {
	case r.Context().Err() != nil:
		ex.reason = "client_gone"
		w.WriteHeader(http.StatusBadGateway)
		return
	case errdefs.HasCode(err, sandbox.CodePortClosed):
		rt.fail(w, r, ex, portClosed(err), "port_closed")
	case errdefs.HasCode(err, sandbox.CodePreviewsUnsupported):
		rt.fail(w, r, ex, pageUnsupported, "previews_unsupported")
	case errdefs.HasCode(err, sandbox.CodeTooManyTunnels):
		rt.fail(w, r, ex, pageBusy, "too_many_tunnels")
	case errors.Is(err, errdefs.ErrConflict):
		rt.fail(w, r, ex, pageNotRunning, "not_running")
	case errors.Is(err, errdefs.ErrNotFound):
		rt.fail(w, r, ex, pageNotFound, "not_found")
	case errors.Is(err, errdefs.ErrUnavailable):
		rt.fail(w, r, ex, pageAgentDown, "agent_unreachable")
	default:
		rt.fail(w, r, ex, pageBadGateway, "backend_error")
	}
	rt.log.Debug("preview: proxy failed", logattr.Sandbox(ex.target.SandboxID), "port", ex.target.Port, "reason", ex.reason, "err", err)
}

// stripQuery removes the parameters named from a raw query and leaves the
// others exactly as they were.
func stripQuery(raw string, names ...string) string {
	if !mayHoldParam(raw, names...) {
		return raw
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if name, err := url.QueryUnescape(k); err == nil && contains(names, name) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}

// mayHoldParam reports whether a raw query (or a URL) may name one of
// names: it does when it holds one of them as it is, and it may when it
// holds a percent escape, which could spell one.
func mayHoldParam(raw string, names ...string) bool {
	if strings.IndexByte(raw, '%') >= 0 {
		return true
	}
	for _, n := range names {
		if strings.Contains(raw, n) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// stripKeys removes Authorization headers that carry a hutch API key; any
// other scheme is the app's own and passes.
func stripKeys(h http.Header) {
	vs := h.Values("Authorization")
	if len(vs) == 0 {
		return
	}
	var kept []string
	for _, v := range vs {
		if _, ok := hutchKey(v); !ok {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		h.Del("Authorization")
		return
	}
	h["Authorization"] = kept
}

// stripCookie removes the cookie name from the Cookie headers, leaving the
// app's own cookies as they were.
func stripCookie(h http.Header, name string) {
	vs := h.Values("Cookie")
	if len(vs) == 0 {
		return
	}
	var out []string
	for _, v := range vs {
		var kept []string
		for _, c := range strings.Split(v, ";") {
			n, _, _ := strings.Cut(strings.TrimSpace(c), "=")
			if n == name {
				continue
			}
			kept = append(kept, strings.TrimSpace(c))
		}
		if len(kept) > 0 {
			out = append(out, strings.Join(kept, "; "))
		}
	}
	if len(out) == 0 {
		h.Del("Cookie")
		return
	}
	h["Cookie"] = out
}

// upgradeType is the protocol a request or response asks to switch to.
func upgradeType(h http.Header) string {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}
