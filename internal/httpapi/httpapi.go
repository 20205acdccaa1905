// Package httpapi serves hutch's /v1 API: one file per resource, one error
// writer, and a route table that a test holds to api/openapi.yaml.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/hutchdev/hutch/internal/auth"
	"github.com/hutchdev/hutch/internal/sandbox"
	"github.com/hutchdev/hutch/internal/secrets"
	"github.com/hutchdev/hutch/internal/store"
)

// Config is what the API serves from. Sandboxes, Store, Auth and Log
// are required.
type Config struct {
	Sandboxes Sandboxes
	// Events wakes event streams when an event is appended; nil: streams
	// only poll the store.
	Events *sandbox.Notifier
	// Previews serves the preview routes; nil: they answer 501.
	Previews     Previews
	Secrets      *secrets.Service // nil: the secret routes answer 503
	Store        store.Store
	Auth         *auth.Authenticator
	Log          *slog.Logger
	Version      string
	MaxBodyBytes int64 // JSON request bodies
	MaxTarBytes  int64 // tar uploads
}

// API is the /v1 HTTP handler.
type API struct {
	cfg Config
	mux *http.ServeMux
}

// New builds the handler.
func New(cfg Config) *API {
	a := &API{cfg: cfg, mux: http.NewServeMux()}
	for _, r := range a.routes() {
		h := r.handler
		if !r.public {
			h = a.authenticate(h)
		}
		a.mux.Handle(r.method+" "+r.pattern, h)
	}
	return a
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.logRequests(a.recoverPanics(a.mux)).ServeHTTP(w, r)
}
