// Package forward carries a request for a sandbox that another node runs
// to that node's API, so that a client may talk to any node of a fleet
// on one shared store. Only the node whose drivers run a sandbox holds
// its agent's connection; every other node forwards.
//
// A hop is authenticated by the fleet's cluster key (LoadKey), never by
// the client's: the receiving node authenticates the client as always,
// then forwards with the key's id only, under an HMAC-SHA256 signature
// over the method, host, path and query, the key id, both nodes' names, a
// time and a nonce (sign.go). The owning node checks the signature, the
// time (within Window) and that the nonce is new (Verifier.Accept), then
// re-checks the key by id (auth.Authenticator.BeginKey), so revoking the
// key ends a forwarded stream on both nodes. A request that carries a
// forwarding header without a valid signature is refused 401
// forward_unauthorized, and one already forwarded is never forwarded
// again (409 forward_loop).
//
// The hop is an httputil.ReverseProxy over pooled keep-alive connections:
// bodies, streams and WebSocket upgrades pass both ways unbuffered, and
// the hop ends when either side goes (the receiving request's context, or
// the owner's connection). A node that cannot be reached is 503
// node_unavailable within DialTimeout.
//
// Lifecycle: LoadKey, New (no side effects), Accept around the server's
// handler, Forward from the handlers that resolved a sandbox's node (Try
// for a create, which may be placed again when nothing of it reached the
// node), Close at shutdown to drop idle connections.
package forward

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/connlimit"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// DefaultDialTimeout bounds the connection to another node: a lost node
// is answered node_unavailable within it.
const DefaultDialTimeout = 2 * time.Second

// Nodes says where nodes are: a node's name to the base URL of its API
// (the node registry's Advertise).
type Nodes interface {
	// URL returns node's base URL, or an error: ErrNotFound or
	// ErrUnavailable when the node is unknown or not serving.
	URL(ctx context.Context, node string) (*url.URL, error)
}

// Config is what a Forwarder forwards with. Node and Nodes are required.
type Config struct {
	// Node is this node's name: the From of what it forwards, the To of
	// what it accepts.
	Node string
	// Key is the cluster key (LoadKey); nil: nothing is forwarded or
	// accepted.
	Key   []byte
	Nodes Nodes
	// NodesTTL is how long an answer of Nodes is kept (nodeCache); zero:
	// Nodes is asked on every hop.
	NodesTTL time.Duration
	// Fail answers a request with an error; nil: in the API's one error
	// shape (api.Error).
	Fail func(w http.ResponseWriter, r *http.Request, err error)
	Log  *slog.Logger
	// DialTimeout bounds a connection to another node; zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Forwarder forwards requests to other nodes and accepts those other
// nodes forward. It is safe for concurrent use.
type Forwarder struct {
	cfg   Config
	nodes *nodeCache
	tr    *http.Transport
	proxy *httputil.ReverseProxy
	seen  nonces
	bufs  buffers
}

// New returns a Forwarder for cfg.
func New(cfg Config) *Forwarder {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Fail == nil {
		cfg.Fail = writeError
	}
	f := &Forwarder{cfg: cfg, nodes: &nodeCache{nodes: cfg.Nodes, ttl: cfg.NodesTTL, urls: map[string]cachedURL{}}}
	f.tr = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   cfg.DialTimeout,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // the client's Accept-Encoding passes as it is
		ExpectContinueTimeout: time.Second,
	}
	f.proxy = &httputil.ReverseProxy{
		Rewrite:       f.rewrite,
		Transport:     f.tr,
		FlushInterval: -1, // every write of a stream goes on at once
		BufferPool:    &f.bufs,
		ErrorHandler:  f.proxyError,
		ErrorLog:      slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	return f
}

// Node is this node's name.
func (f *Forwarder) Node() string { return f.cfg.Node }

// Close drops the idle connections to other nodes.
func (f *Forwarder) Close() { f.tr.CloseIdleConnections() }

// dest is where one request is forwarded, for rewrite.
type dest struct {
	to    string
	url   *url.URL
	keyID string
	// unreached, when set (Try), takes the error of a hop that never
	// reached the node, which is then not answered.
	unreached *error
	// resend: a request the transport may send again on a new connection
	// when the kept one it wrote it on failed before any answer (Try's).
	resend bool
}

type destKey struct{}

// Forward serves r on node to, as the client's key keyID ("" for a
// preview, which the owning node authorizes itself): the response,
// streamed, is the owner's. A request that was itself forwarded is
// refused 409 forward_loop; without a cluster key, 503
// cluster_key_missing; an unknown or unreachable node, 503
// node_unavailable.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, to, keyID string) {
	f.forward(w, r, dest{to: to, keyID: keyID})
}

// Try is Forward for a request that must reach one node at most, a
// create: when nothing of r reached node to (the registry says it is
// not serving, or no connection to it could be made: refused, timed
// out), Try answers nothing and returns that error (503
// node_unavailable), so that the caller may send r elsewhere. Anything
// else, a failure after the connection was made included, is answered
// as Forward answers it, and Try returns nil.
func (f *Forwarder) Try(w http.ResponseWriter, r *http.Request, to, keyID string) error {
	var unreached error
	f.forward(w, r, dest{to: to, keyID: keyID, unreached: &unreached, resend: true})
	return unreached
}

func (f *Forwarder) forward(w http.ResponseWriter, r *http.Request, d dest) {
	if hop, ok := HopFrom(r.Context()); ok {
		f.cfg.Fail(w, r, errdefs.New(errdefs.ErrConflict, "forward_loop",
			"node %s forwarded this request here, but node %s runs the sandbox; it is not forwarded twice", hop.From, d.to))
		return
	}
	if len(f.cfg.Key) == 0 {
		f.cfg.Fail(w, r, errdefs.New(errdefs.ErrUnavailable, "cluster_key_missing",
			"node %s runs this sandbox, and this node has no cluster key to reach it ($HUTCH_CLUSTER_KEY or <data>/cluster.key on every node)", d.to))
		return
	}
	u, kept, err := f.resolve(r.Context(), d.to)
	if err != nil {
		f.unreached(w, r, d, unavailable(d.to, err))
		return
	}
	// A stream's request body (stdin) keeps flowing while its response
	// does. A body the hop did not read to its end (the owner could not
	// be reached, or answered first) is closed before the handler
	// returns: the HTTP/1 server reading the rest of a full-duplex body
	// to keep the connection panics otherwise (golang/go#68560).
	http.NewResponseController(w).EnableFullDuplex()
	defer r.Body.Close()
	if kept {
		// The address kept may be stale: the node restarted on another.
		// A hop that could not connect on it (so nothing of r was read)
		// asks the registry again and goes to the new address, if any.
		var unreached error
		first := d
		first.url, first.unreached = u, &unreached
		f.serve(w, r, first, true)
		if unreached == nil {
			return
		}
		fresh, ok := f.moved(r.Context(), d.to, u)
		if !ok {
			f.unreached(w, r, d, unreached)
			return
		}
		u = fresh
	}
	d.url = u
	f.serve(w, r, d, false)
}

// resolve is node's base URL (within the dial bound), and whether it
// was kept from an earlier answer.
func (f *Forwarder) resolve(ctx context.Context, node string) (*url.URL, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.DialTimeout)
	defer cancel()
	return f.nodes.url(ctx, node)
}

// moved is node's address as the registry says it now, when u, the one
// kept, could not be connected to: ok only if it is another address.
func (f *Forwarder) moved(ctx context.Context, node string, u *url.URL) (*url.URL, bool) {
	f.nodes.forget(node, u)
	fresh, _, err := f.resolve(ctx, node)
	return fresh, err == nil && fresh.String() != u.String()
}

// unreached answers err, a hop's that reached nothing, or hands it to
// Try's caller.
func (f *Forwarder) unreached(w http.ResponseWriter, r *http.Request, d dest, err error) {
	if d.unreached != nil {
		*d.unreached = err
		return
	}
	f.cfg.Fail(w, r, err)
}

// serve proxies r to d. With keepOpen, r's body outlives a hop that
// could not connect (the transport closes what it was given), so that
// it can be sent again.
func (f *Forwarder) serve(w http.ResponseWriter, r *http.Request, d dest, keepOpen bool) {
	out := r.WithContext(context.WithValue(r.Context(), destKey{}, d))
	if keepOpen && r.Body != nil && r.Body != http.NoBody {
		out.Body = io.NopCloser(r.Body)
	}
	if d.resend && r.GetBody != nil {
		// A connection kept from an earlier call to a node that died
		// since takes the request and fails after: the transport sends
		// again on a new connection only what it may send twice (an
		// idempotency key, here without a value, so none goes out). The
		// new connection's dial then fails, which is unreached, and the
		// create goes elsewhere. The one case it is made twice: a node
		// that read it, lost the connection before it answered, and
		// still serves; the first sandbox is then listed, never answered.
		out.Header = out.Header.Clone()
		out.Header["X-Idempotency-Key"] = nil
	}
	f.proxy.ServeHTTP(w, out)
}

// dialFailed reports whether err, a hop's, says no connection to the
// node was made, so nothing of the request reached it.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func unavailable(to string, err error) error {
	return errdefs.Wrap(errdefs.ErrUnavailable, "node_unavailable", err, "node %s, which runs this sandbox, cannot be reached; try again later", to)
}

// credentialHeaders carry a client's key, which never leaves the node
// that received it: Authorization (the API's, previews') and X-API-KEY
// (the E2B layer's).
var credentialHeaders = []string{"Authorization", "X-API-KEY"}

// rewrite makes the request to the owning node: its URL, the client's
// Host (previews are routed by it), no credential of the client's, and
// the hop's signature.
func (f *Forwarder) rewrite(pr *httputil.ProxyRequest) {
	d := pr.In.Context().Value(destKey{}).(dest)
	pr.SetURL(d.url)
	pr.Out.Host = pr.In.Host
	for _, h := range credentialHeaders {
		pr.Out.Header.Del(h)
	}
	stripHeaders(pr.Out.Header)
	pr.SetXForwarded()
	sign(f.cfg.Key, pr.Out, d.keyID, f.cfg.Node, d.to, f.cfg.Now())
}

// proxyError answers a hop that failed before the owner answered.
func (f *Forwarder) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	d, _ := r.Context().Value(destKey{}).(dest)
	if cause := context.Cause(r.Context()); cause != nil {
		// The client went, or its key was revoked: say why to whoever
		// still listens.
		if errors.Is(cause, context.Canceled) {
			return
		}
		f.cfg.Fail(w, r, cause)
		return
	}
	if d.unreached != nil && dialFailed(err) {
		*d.unreached = unavailable(d.to, err)
		return
	}
	f.cfg.Log.Warn("forward failed", "node", d.to, "path", r.URL.Path, "err", err)
	f.cfg.Fail(w, r, unavailable(d.to, err))
}

// writeError answers err in the API's error shape.
func writeError(w http.ResponseWriter, _ *http.Request, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
}

type hopKey struct{}

// HopFrom returns the hop that brought the request of ctx here, if
// another node forwarded it (Accept verified it).
func HopFrom(ctx context.Context) (Hop, bool) {
	h, ok := ctx.Value(hopKey{}).(Hop)
	return h, ok
}

// Accept wraps the server's handler: a request with a forwarding header
// must carry a valid signature for this node (401 forward_unauthorized
// otherwise); it goes on without those headers, its Hop in its context
// (HopFrom). Other requests pass as they are.
func (f *Forwarder) Accept(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !carries(r.Header) {
			next.ServeHTTP(w, r)
			return
		}
		hop, err := verify(f.cfg.Key, r, f.cfg.Node, f.cfg.Now(), &f.seen)
		if err != nil {
			f.cfg.Log.Warn("forwarded request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			f.cfg.Fail(w, r, err)
			return
		}
		stripHeaders(r.Header)
		// A node's pooled connections carry many clients' requests: they
		// are not one client's under --max-conns-per-client.
		connlimit.Exempt(r.Context())
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), hopKey{}, hop)))
	})
}
