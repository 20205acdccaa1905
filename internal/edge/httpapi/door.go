package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/router"
)

// Sandboxes is what the API asks of the sandbox service, the only door to
// a sandbox (internal/control/sandbox.Service): the API never holds an agent
// client or a driver. It plays every role of the service.
type Sandboxes interface {
	sandbox.Lifecycle
	sandbox.Commands
	sandbox.Files
	sandbox.Processes
	sandbox.Snapshots
	sandbox.Network
	sandbox.Meter
	sandbox.Limits
	sandbox.Ports
	sandbox.Locate
}

// Previews is what the API asks of the preview router
// (internal/edge/router.Router): signed URLs, links, and forgetting what it
// cached of a sandbox's ports when their setting changes.
type Previews interface {
	SignedURL(r *http.Request, t router.Target, keyID string, ttl time.Duration) (string, time.Time, error)
	URL(r *http.Request, t router.Target) string
	Forget(sandboxID string)
}

// Tenants is what the API asks of the tenants service
// (internal/control/tenants.Service), the one door to a tenant as a
// whole: made, shown, suspended, resumed and deleted (the server's wiring
// holds the service to it).
type Tenants interface {
	Create(ctx context.Context, name string) (api.Tenant, error)
	Get(ctx context.Context, id string) (api.Tenant, error)
	Suspend(ctx context.Context, id string) (api.Tenant, error)
	Resume(ctx context.Context, id string) (api.Tenant, error)
	Delete(ctx context.Context, id string) (api.Tenant, error)
}

// Placement chooses the node of a fleet a sandbox is made on
// (internal/control/placement.Placer), passing over the nodes in skip.
type Placement interface {
	Place(ctx context.Context, req api.CreateSandboxRequest, skip []string) (string, error)
}

var (
	_ Sandboxes = (*sandbox.Service)(nil)
	_ Previews  = (*router.Router)(nil)
)
