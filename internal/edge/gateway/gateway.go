// Package gateway is hutch's provider gateway: code in a sandbox calls an
// LLM or search API at /provider/v1/<provider>/<path> without ever holding
// its key.
//
// The operator names the providers (LoadFile): an upstream base URL, where
// the key goes on a request, and the secret that holds it. A sandbox
// presents its own token (HUTCH_PROVIDER_TOKEN, in any header an SDK puts
// a key in); the gateway checks it, keeps the call below the provider's
// base URL, removes the caller's credentials, adds the real key from the
// secret store, limits calls per sandbox and provider, streams the answer
// as it comes (server-sent events, WebSocket upgrades), and records each
// call as a provider.call event: sandbox, provider, status, bytes and
// latency, never the key.
//
// Calls arrive on a sandbox's egress channel, at the proxy's own address
// (ForSandbox): the channel names the sandbox, and the token must be that
// sandbox's. The gateway is not on the API listener, so a token that
// leaves its sandbox is of no use to another sandbox (a process-driver
// sandbox's channel is a port on the host's loopback, which host
// processes, though not other sandboxes, can reach). It serves under
// every egress policy, none included: the providers are the operator's.
package gateway

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
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// Prefix is the gateway's path on a sandbox's egress channel.
const Prefix = api.ProviderPath + "/"

// Owners says whose a sandbox is and its state (sandbox.Directory; called
// with a system context).
type Owners interface {
	OwnerOf(ctx context.Context, id string) (sandbox.Owner, error)
}

var _ Owners = (*sandbox.Directory)(nil)

// Keys reveals an env secret of the tenant of ctx's principal, and refuses
// a registry secret (code secret_registry_only): that one goes to its
// registry alone.
type Keys interface {
	Reveal(ctx context.Context, name string) ([]byte, error)
}

// Config is what the gateway needs.
type Config struct {
	Providers []Provider
	// Key signs sandbox tokens; at least MinKeyBytes.
	Key       []byte
	Sandboxes Owners
	Keys      Keys
	Events    events.Appender
	// Observer is told of every call answered (observe.go); nil observes
	// nothing.
	Observer Observer
	Log      *slog.Logger
}

// Gateway serves provider calls. It is safe for concurrent use.
type Gateway struct {
	cfg       Config
	providers map[string]*provider
	tokens    tokens
	limits    limiter
	log       *slog.Logger
}

// provider is a configured provider and its connections upstream.
type provider struct {
	Provider
	transport *http.Transport
}

// New returns a gateway over cfg's providers.
func New(cfg Config) (*Gateway, error) {
	if len(cfg.Key) < MinKeyBytes {
		return nil, fmt.Errorf("gateway: the token key must be at least %d bytes", MinKeyBytes)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{cfg: cfg, providers: map[string]*provider{}, tokens: tokens{key: cfg.Key}, log: cfg.Log}
	for _, p := range cfg.Providers {
		if p.base == nil {
			if err := p.complete(); err != nil {
				return nil, fmt.Errorf("gateway: provider %q: %w", p.Name, err)
			}
		}
		if g.providers[p.Name] != nil {
			return nil, fmt.Errorf("gateway: provider %q is defined twice", p.Name)
		}
		g.providers[p.Name] = &provider{Provider: p, transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: p.HeaderTimeout,
			ExpectContinueTimeout: time.Second,
		}}
	}
	return g, nil
}

// Close drops the idle connections upstream.
func (g *Gateway) Close() {
	for _, p := range g.providers {
		p.transport.CloseIdleConnections()
	}
}

// Env is the part of sandboxID's environment the gateway gives: the
// sandbox's token. (The gateway's URL is the egress proxy's own address,
// which the driver knows and sets.)
func (g *Gateway) Env(sandboxID string) map[string]string {
	return map[string]string{api.EnvProviderToken: g.tokens.issue(sandboxID)}
}

// ForSandbox serves the calls on sandboxID's egress channel.
func (g *Gateway) ForSandbox(sandboxID string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serve(w, r, sandboxID)
	})
}

// serve checks a call on channel's egress channel, in order: the token
// (the channel's sandbox's), the sandbox running, the provider, the path,
// the limits, the key; then proxies it. Every call past the token is
// audited.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, channel string) {
	c := &call{method: r.Method, start: time.Now()}
	id, ok := g.tokens.verify(presented(r))
	if !ok || id != channel {
		g.log.Warn("provider call refused", logattr.Sandbox(channel), "reason", "token")
		g.fail(w, c, errdefs.New(errdefs.ErrUnauthorized, "provider_token_invalid",
			"send this sandbox's $%s as the API key (Authorization: Bearer, x-api-key or api-key)", api.EnvProviderToken))
		return
	}
	own, err := g.cfg.Sandboxes.OwnerOf(tenancy.System(r.Context()), id)
	if err != nil || own.State != api.StateRunning {
		g.fail(w, c, errdefs.New(errdefs.ErrUnauthorized, "sandbox_not_running", "the token's sandbox is not running"))
		return
	}
	c.sandbox, c.tenant = id, own.TenantID
	name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), Prefix), "/")
	c.provider, c.path = name, "/"+rest
	p := g.providers[name]
	if p == nil {
		g.fail(w, c, errdefs.NotFound("provider_not_found", "no provider %q is configured on this server", name))
		return
	}
	target, err := p.target(rest, r.URL.RawQuery)
	if err != nil {
		g.fail(w, c, errdefs.Invalid("invalid_provider_path", "%s", err.Error()))
		return
	}
	release, wait, ok := g.limits.take(id, &p.Provider, time.Now())
	if !ok {
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			g.fail(w, c, errdefs.New(errdefs.ErrRateLimited, "rate_limited",
				"this sandbox may call %s %d times a minute", name, p.RequestsPerMinute))
		} else {
			w.Header().Set("Retry-After", "1")
			g.fail(w, c, errdefs.New(errdefs.ErrRateLimited, "too_many_in_flight",
				"this sandbox may have %d calls to %s in flight at once", p.MaxConcurrent, name))
		}
		return
	}
	defer release()
	cred, err := g.credential(r.Context(), own.TenantID, p)
	if err != nil {
		g.fail(w, c, err)
		return
	}
	if r.ContentLength > p.MaxRequestBytes {
		g.fail(w, c, errTooLarge(p))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, p.MaxRequestBytes)
	g.proxy(p, target, cred, c).ServeHTTP(w, r)
	g.observe(c)
	g.audit(c, "")
}

// credential is the key's header or query value, from the secret in the
// sandbox's tenant (or the provider's shared one).
func (g *Gateway) credential(ctx context.Context, tenant string, p *provider) (string, error) {
	if p.SecretTenant != "" {
		tenant = p.SecretTenant
	}
	key, err := g.cfg.Keys.Reveal(tenancy.With(ctx, tenancy.Principal{TenantID: tenant}), p.Secret)
	if errors.Is(err, errdefs.ErrNotFound) {
		return "", errdefs.NotFound("provider_key_missing",
			"provider %s's key is not set: create the secret %q in this sandbox's tenant", p.Name, p.Secret)
	}
	if errdefs.HasCode(err, "secret_registry_only") {
		return "", errdefs.Unavailable("provider_key_invalid",
			"the secret %q is a registry secret, sent to its registry alone: provider %s's key must be an ordinary (env) secret", p.Secret, p.Name)
	}
	if err != nil {
		return "", errdefs.Wrap(errdefs.ErrUnavailable, "provider_key_unreadable", err, "provider %s's key cannot be read", p.Name)
	}
	if p.Query == "" && !headerSafe(key) {
		return "", errdefs.Unavailable("provider_key_invalid", "the secret %q holds characters a header cannot carry", p.Secret)
	}
	return p.credential(key), nil
}

// headerSafe reports whether b may be a header value: no control
// characters but tab.
func headerSafe(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// proxy is the reverse proxy of one admitted call.
func (g *Gateway) proxy(p *provider, target *url.URL, cred string, c *call) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL, pr.Out.Host = target, ""
			stripCredentials(pr.Out.Header, p.Header)
			p.inject(pr.Out, cred)
			if pr.Out.Body != nil && pr.Out.Body != http.NoBody {
				pr.Out.Body = &countingBody{ReadCloser: pr.Out.Body, n: &c.out}
			}
		},
		// FlushInterval 0: ReverseProxy flushes streamed answers (event
		// streams, bodies of unknown length) write by write by itself.
		Transport: p.transport,
		ModifyResponse: func(resp *http.Response) error {
			c.status.Store(int32(resp.StatusCode))
			c.ttfb.Store(int64(time.Since(c.start)))
			if resp.StatusCode != http.StatusSwitchingProtocols { // an upgrade's body is the connection
				resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.in}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				err = errTooLarge(p)
			case errors.Is(err, context.Canceled):
				c.status.Store(499) // the caller went away
				return
			default:
				// The cause may hold the upstream URL, and with it a key
				// in the query: only its class is logged.
				g.log.Warn("provider upstream failed", logattr.Sandbox(c.sandbox), "provider", p.Name, "err", upstreamError(err))
				err = errdefs.Unavailable("provider_unreachable", "provider %s did not answer", p.Name)
			}
			status, _, _ := errdefs.HTTPStatus(err)
			c.status.Store(int32(status))
			writeError(w, err)
		},
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
}
