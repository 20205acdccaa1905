package gateway

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/events"
)

// call is one call in progress, for its audit record.
type call struct {
	sandbox  string // "" until the token's sandbox is found running
	tenant   string // the sandbox's
	provider string
	method   string
	path     string
	start    time.Time
	counts
}

// counts are what a call carried, set as it goes.
type counts struct {
	status  atomic.Int32
	ttfb    atomic.Int64 // to the upstream's response headers
	out, in atomic.Int64
}

// fail answers a refused call and audits it when its sandbox is known.
func (g *Gateway) fail(w http.ResponseWriter, c *call, err error) {
	status, code, _ := errdefs.HTTPStatus(err)
	c.status.Store(int32(status))
	writeError(w, err)
	g.observe(c)
	if c.sandbox != "" {
		g.audit(c, code)
	}
}

// audit records a call: a provider.call event in the sandbox's tenant
// and a log line. refused is the code of a call the gateway refused.
func (g *Gateway) audit(c *call, refused string) {
	latency := time.Since(c.start)
	status := int(c.status.Load())
	data := map[string]any{
		"provider": c.provider, "method": c.method, "path": c.path, "status": status,
		"bytes_out": c.out.Load(), "bytes_in": c.in.Load(), "latency_ms": latency.Milliseconds(),
	}
	msg := fmt.Sprintf("%s %s%s: %d", c.method, c.provider, c.path, status)
	if refused != "" {
		data["refused"] = refused
		msg += " (" + refused + ")"
	} else {
		data["ttfb_ms"] = time.Duration(c.ttfb.Load()).Milliseconds()
	}
	g.log.Info("provider call", logattr.Sandbox(c.sandbox), logattr.Tenant(c.tenant), "provider", c.provider,
		"method", c.method, "path", c.path, "status", status, "bytes_out", c.out.Load(), "bytes_in", c.in.Load(),
		"latency_ms", latency.Milliseconds(), "refused", refused)
	events.Record(g.cfg.Events, g.log, &events.Event{TenantID: c.tenant, SandboxID: c.sandbox,
		Type: api.EventProviderCall, Message: msg, Data: data})
}
