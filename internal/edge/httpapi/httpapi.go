// Package httpapi serves hutch's /v1 API: one file per resource, one error
// writer, and a route table that a test holds to api/openapi.yaml.
package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/nodes"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/control/volumes"
	"github.com/hutchdev/hutch/internal/edge/deadline"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/telemetry"
)

// Config is what the API serves from. Sandboxes, Events, Auth, Tenants,
// Quotas and Log are required.
type Config struct {
	Sandboxes Sandboxes
	// Events is the event log the event routes read; its appends wake
	// their streams.
	Events *events.Log
	// Previews serves the preview routes; nil: they answer 501.
	Previews Previews
	Secrets  *secrets.Service // nil: the secret routes answer 503
	// Templates serves the template routes; nil (no driver of this
	// server starts sandboxes from images): they answer 503.
	Templates *templates.Service
	// Volumes serves the volume routes; nil: they answer 503.
	Volumes *volumes.Service
	// Apps serves /v1/apps; nil: those routes answer 503.
	Apps *apps.Service
	// Settings serves GET and PATCH /v1/settings; nil: they answer 503.
	Settings *settings.Service
	// Nodes serves /v1/nodes; nil: those routes answer 503.
	Nodes *nodes.Node
	// Auth authenticates every request and makes, lists and revokes the
	// caller's tenant's keys.
	Auth *auth.Authenticator
	// Tenants makes, shows, suspends, resumes and deletes tenants.
	Tenants Tenants
	// Quotas shows and sets tenants' quotas, and holds each tenant's
	// place for every stream the API serves it (streams.go).
	Quotas       *quota.Service
	Log          *slog.Logger
	Version      string
	MaxBodyBytes int64 // JSON request bodies
	MaxTarBytes  int64 // tar uploads
	// StoreName is the registered name of the server's store, for GET
	// /v1/info.
	StoreName string
	// Storage is what the data directory's filesystem offers, for GET
	// /v1/info; nil when it was not probed.
	Storage *api.StorageInfo
	// Metrics measures every route and serves GET /metrics; nil: nothing
	// is measured and /metrics answers 503.
	Metrics *telemetry.Metrics
	// Forward carries a request for a sandbox another node runs to that
	// node, and tells the requests other nodes forwarded here
	// (forward.go); nil: every sandbox is this node's.
	Forward *forward.Forwarder
	// Placement chooses the node a new sandbox is made on (with
	// Forward); nil: this one.
	Placement Placement
}

// API is the /v1 HTTP handler.
type API struct {
	cfg Config
	mux *http.ServeMux
	// inflight counts the requests being served, WebSocket ones too,
	// which http.Server.Shutdown does not wait for (Wait).
	inflight sync.WaitGroup
}

// New builds the handler. Whatever matches no route is answered in the
// one error shape too: 404 unknown_route for a path the API does not
// have, 405 method_not_allowed (with Allow) for one it has under other
// methods.
func New(cfg Config) *API {
	a := &API{cfg: cfg, mux: http.NewServeMux()}
	methods := map[string][]string{}
	for _, r := range a.routes() {
		h := onlyQuery(r, a.writeError)
		switch {
		case a.cfg.Forward == nil || r.anyNode:
		case strings.HasPrefix(r.pattern, "/v1/sandboxes/{id}"):
			h = a.toOwner(h)
		case strings.HasPrefix(r.pattern, "/v1/apps/{id}") && a.cfg.Apps != nil:
			h = a.toAppOwner(h)
		case r.method == "DELETE" && r.pattern == "/v1/snapshots/{id}":
			h = a.toDiskOwner(a.snapshotNode, "id", h)
		case r.method == "DELETE" && r.pattern == "/v1/volumes/{name}":
			h = a.toDiskOwner(a.volumeNode, "name", h)
		case r.method == "DELETE" && r.pattern == "/v1/templates/{name}":
			h = a.toDiskOwner(a.templateNode, "name", h)
		}
		if !r.public {
			h = a.authenticate(cmp.Or(r.role, api.RoleMember), h)
		}
		if r.long {
			long := h
			h = func(w http.ResponseWriter, req *http.Request) {
				deadline.Lift(w)
				long(w, req)
			}
		}
		a.mux.Handle(r.method+" "+r.pattern, a.cfg.Metrics.Route(r.method, r.pattern, r.long, h))
		methods[r.pattern] = append(methods[r.pattern], r.method)
	}
	for pattern, allowed := range methods {
		a.mux.Handle(pattern, a.cfg.Metrics.Unmatched(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			a.writeError(w, r, errdefs.New(errdefs.ErrMethodNotAllowed, "method_not_allowed",
				"%s takes %s, not %s", r.URL.Path, strings.Join(allowed, ", "), r.Method))
		})))
	}
	a.mux.Handle("/", a.cfg.Metrics.Unmatched(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, errdefs.NotFound("unknown_route", "no such route: %s %s", r.Method, r.URL.Path))
	})))
	return a
}

// onlyQuery refuses a request with a query parameter its route does not
// take, as an unknown JSON field is refused: a typo (?lable=) would
// otherwise be ignored in silence.
func onlyQuery(rt route, fail func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for name := range r.URL.Query() {
			if !slices.Contains(rt.query, name) {
				takes := "no query parameters"
				if len(rt.query) > 0 {
					takes = "only " + strings.Join(rt.query, ", ")
				}
				fail(w, r, errdefs.Invalid("unknown_parameter", "unknown query parameter %q: %s %s takes %s", name, rt.method, rt.pattern, takes))
				return
			}
		}
		rt.handler(w, r)
	}
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.inflight.Add(1)
	defer a.inflight.Done()
	a.logRequests(a.recoverPanics(a.mux)).ServeHTTP(w, r)
}

// Wait waits until every request being served has ended, the WebSocket
// ones (terminals, streams) included: http.Server.Shutdown does not wait
// for a connection a handler took over. Call it once the server takes no
// more requests, and before closing what the handlers use.
func (a *API) Wait() { a.inflight.Wait() }
