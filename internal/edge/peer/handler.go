package peer

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/deadline"
	"github.com/hutchdev/hutch/internal/edge/forward"
)

// Blobs opens a tenant's template's blob as this node keeps it
// (templates.Service.OpenBlob), in the tenant of ctx's principal.
type Blobs interface {
	OpenBlob(ctx context.Context, name, digest string) (io.ReadCloser, int64, error)
}

// Mount serves the node-to-node calls under Prefix, those another node
// signed as its own (forward.NodeCall), and passes every other request
// to next as it came: a client's, or one forwarded for a client (a
// preview's path may be anything). blobs nil (this node keeps no
// templates) answers the blob calls 404; log nil logs nothing.
func Mount(next http.Handler, blobs Blobs, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"tenants/{tenant}/templates/{name}/blobs/{hex}", blobHandler(blobs, log))
	mux.Handle(Prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail(w, errdefs.NotFound("not_found", "no such node-to-node call"))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hop, ok := forward.HopFrom(r.Context()); ok && hop.KeyID == forward.NodeCall && strings.HasPrefix(r.URL.Path, Prefix) {
			mux.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// blobHandler streams a template's blob to the node that asked for it.
func blobHandler(blobs Blobs, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hop, _ := forward.HopFrom(r.Context())
		if blobs == nil {
			fail(w, errdefs.NotFound("not_found", "no such route"))
			return
		}
		tenant, name := r.PathValue("tenant"), r.PathValue("name")
		ctx := tenancy.With(r.Context(), tenancy.Principal{TenantID: tenant, Role: api.RoleReader})
		rc, size, err := blobs.OpenBlob(ctx, name, "sha256:"+r.PathValue("hex"))
		if err != nil {
			fail(w, err)
			return
		}
		defer rc.Close()
		// A layer may take longer than an ordinary request may.
		deadline.Lift(w)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		n, err := io.Copy(w, rc)
		if err != nil {
			log.Warn("template blob not sent whole", logattr.Tenant(tenant), "template", name, "to", hop.From, "bytes", n, "err", err)
			return
		}
		log.Info("template blob sent", logattr.Tenant(tenant), "template", name, "to", hop.From, "bytes", n)
	}
}

// fail answers err in the API's error shape.
func fail(w http.ResponseWriter, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
}
