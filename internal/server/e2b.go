package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/keyfile"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/e2b"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/router"
)

// openE2B builds the E2B translation layer, with the key that signs its
// envd access tokens (<data>/e2b.key, made on the first start; in a fleet
// derived from the cluster key, so that a token one node gave is good on
// every node) and the forwarder that carries calls for other nodes'
// sandboxes to them.
func (s *Server) openE2B(_ context.Context, p *parts) error {
	var key []byte
	if p.forwarding && p.clusterKey != nil {
		key = forward.DeriveKey(p.clusterKey, "e2b")
	} else {
		var err error
		if key, err = keyfile.Load(filepath.Join(s.cfg.DataDir, "e2b.key"), router.KeyBytes); err != nil {
			return fmt.Errorf("e2b key: %w", err)
		}
	}
	cfg := e2b.Config{Sandboxes: p.sandboxes, Auth: p.auth, Keys: tenantKeys{p.directory, p.auth}, Key: key, Domain: s.cfg.PreviewDomain,
		MaxBodyBytes: s.cfg.MaxBodyBytes, Log: s.log}
	if f := p.forwarder(); f != nil {
		cfg.Forward = f
		// Placed as the API's creates: p.api is opened after this layer
		// and before anything is served.
		cfg.Place = func(w http.ResponseWriter, r *http.Request, req api.CreateSandboxRequest, body any) (bool, error) {
			return p.api.PlaceAndSend(w, r, req, body)
		}
	}
	compat := e2b.New(cfg)
	s.onClose("e2b watchers", func(context.Context) error { compat.Close(); return nil })
	p.e2b = compat
	return nil
}

// withE2B puts the E2B translation layer in front of the server's handler
// next (previews, apps and the API): a preview host of port e2b.EnvdPort is
// that sandbox's envd, as the SDK addresses it without E2B_SANDBOX_URL; a
// path under e2b.Prefix on the API's host is the E2B APIs.
func withE2B(compat *e2b.Handler, domain string, previews func(http.Handler) http.Handler, api http.Handler) http.Handler {
	next := previews(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == e2b.Prefix || strings.HasPrefix(r.URL.Path, e2b.Prefix+"/") {
			compat.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, err := router.ParseHost(r.Host, domain); err == nil && t.Port == e2b.EnvdPort {
			compat.ServeEnvd(w, r, t.SandboxID)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tenantKeys lists the keys of a sandbox's tenant, for the E2B layer's
// signed URLs: whose the sandbox is from the directory, its tenant's keys
// from auth.
type tenantKeys struct {
	dir  *sandbox.Directory
	auth *auth.Authenticator
}

func (k tenantKeys) KeyIDs(ctx context.Context, sandboxID string) ([]string, error) {
	own, err := k.dir.OwnerOf(tenancy.System(ctx), sandboxID)
	if err != nil {
		return nil, err
	}
	keys, err := k.auth.ListKeys(tenancy.With(ctx, tenancy.Principal{TenantID: own.TenantID}))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(keys.Keys))
	for i, key := range keys.Keys {
		ids[i] = key.ID
	}
	return ids, nil
}
