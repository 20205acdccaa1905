// Package e2b lets the unmodified E2B SDK drive hutch. It serves E2B's
// control REST API (sandboxes, timeouts, pause, snapshots, fork, metrics)
// and the API of E2B's in-sandbox daemon, envd (the Connect-RPC services
// process.Process and filesystem.Filesystem, and the /files upload and
// download routes), each call translated onto the sandbox service that
// hutch's own API uses. Nothing here runs a command or touches a file by
// itself: it is a translation layer, not a second implementation.
//
// A client points the SDK at one hutch server:
//
//	E2B_API_URL=http://host:8080/e2b
//	E2B_SANDBOX_URL=http://host:8080/e2b/envd
//	E2B_API_KEY=<a hutch API key>
//
// The control API takes the key in X-API-KEY. Every sandbox it creates or
// connects to comes with an envd access token (token.go) that names the
// key and the sandbox; envd calls carry it in X-Access-Token and the
// sandbox's id in E2b-Sandbox-Id, and act as that key, so revoking the key
// ends them too.
package e2b

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"

	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// EnvdVersion is the envd version hutch answers as. The SDK turns features
// on by it: 0.5.7 has closeStdin and octet-stream uploads; the features of
// 0.6.x (file metadata, entries in watch events) are what hutch does not
// translate yet, and the SDK refuses them before it asks.
const EnvdVersion = "0.5.7"

// Prefix is where the handler is mounted on the API's listener.
const Prefix = "/e2b"

// EnvdPort is envd's port in E2B: without E2B_SANDBOX_URL the SDK calls a
// sandbox's envd at https://<EnvdPort>-<id>.<domain>, a hutch preview
// host, which ServeEnvd answers.
const EnvdPort = 49983

// Sandboxes is the part of the sandbox service the translation uses: the
// roles of the calls E2B's control API and envd make.
type Sandboxes interface {
	sandbox.Lifecycle
	sandbox.Files
	sandbox.Processes
	sandbox.Snapshots
	sandbox.Network
	sandbox.Meter
	sandbox.Locate
}

var _ Sandboxes = (*sandbox.Service)(nil)

// Authenticator checks who calls: an API key (the control API) or a key
// an envd access token names (envd). auth.Authenticator is one.
type Authenticator interface {
	Begin(ctx context.Context, header string) (context.Context, func(), error)
	BeginKey(ctx context.Context, id string) (context.Context, func(), error)
}

// Config is what the translation layer needs.
type Config struct {
	Sandboxes Sandboxes
	Auth      Authenticator
	// Keys lists the keys of a sandbox's tenant, for signed /files URLs;
	// nil refuses every signed URL.
	Keys Keys
	// Key signs envd access tokens (32 random bytes, kept in the data
	// directory, so tokens outlive a restart).
	Key []byte
	// Domain is the preview domain: the SDK's getHost(port) builds
	// <port>-<id>.<domain>, which is a hutch preview's host.
	Domain       string
	MaxBodyBytes int64
	Log          *slog.Logger
	// Forward carries a call for a sandbox another node runs to that
	// node (forward.go); nil: every sandbox is this node's.
	Forward Forwarder
	// Place places a create in a fleet as the API's own creates are
	// (httpapi.API.PlaceAndSend): when the node chosen is another, it
	// forwards r there with body as its body and reports true; an error
	// is this layer's to answer. nil: every sandbox is made here.
	Place func(w http.ResponseWriter, r *http.Request, req api.CreateSandboxRequest, body any) (bool, error)
}

// Handler serves the E2B APIs under Prefix.
type Handler struct {
	cfg      Config
	tokens   tokens
	mux      *http.ServeMux
	serve    http.Handler // mux behind CORS
	watchers watchers
	// base is the context of what outlives a request (the polled
	// watchers); Close cancels it.
	base context.Context
	stop context.CancelFunc
}

// New returns the handler, its routes mounted under Prefix.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, tokens: tokens{key: cfg.Key}, mux: http.NewServeMux()}
	h.base, h.stop = context.WithCancel(context.Background())
	h.controlRoutes()
	h.envdRoutes()
	h.serve = withCORS(h.mux)
	return h
}

// Close ends what outlives a request (the polled watchers) and waits for
// it.
func (h *Handler) Close() {
	h.stop()
	h.watchers.close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve.ServeHTTP(w, r)
}

// ServeEnvd serves an envd request that came to a sandbox's own host,
// <EnvdPort>-<id>.<preview domain>: the host names the sandbox, whatever
// E2b-Sandbox-Id says, and the paths are envd's own.
func (h *Handler) ServeEnvd(w http.ResponseWriter, r *http.Request, sandboxID string) {
	if forwarded(r) && strings.HasPrefix(r.URL.Path, envdPrefix+"/") {
		// The node that received it made it an envd call on its
		// API's paths before it forwarded it, the host unchanged.
		h.serve.ServeHTTP(w, r)
		return
	}
	r = r.Clone(r.Context())
	r.Header.Set("E2b-Sandbox-Id", sandboxID)
	r.URL.Path = envdPrefix + r.URL.Path
	r.URL.RawPath = ""
	h.serve.ServeHTTP(w, r)
}
