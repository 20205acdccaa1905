package httpapi

import (
	"net/http"
	"time"

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
}

// Previews is what the API asks of the preview router
// (internal/edge/router.Router): signed URLs, links, and forgetting what it
// cached of a sandbox's ports when their setting changes.
type Previews interface {
	SignedURL(r *http.Request, t router.Target, keyID string, ttl time.Duration) (string, time.Time, error)
	URL(r *http.Request, t router.Target) string
	Forget(sandboxID string)
}

var (
	_ Sandboxes = (*sandbox.Service)(nil)
	_ Previews  = (*router.Router)(nil)
)
