package sandbox

import (
	"maps"
	"net/http"

	"github.com/hutchdev/hutch/internal/driver"
)

// Gateway is the provider gateway as sandboxes meet it (internal/gateway):
// the environment that points a sandbox's processes at it, and its
// handler for one sandbox's egress channel.
type Gateway interface {
	Env(sandboxID string, channel bool) map[string]string
	ForSandbox(sandboxID string) http.Handler
}

// SetGateway gives sandboxes the provider gateway. Call it before Recover
// and before serving.
func (s *Service) SetGateway(g Gateway) { s.gateway = g }

// env is a new sandbox's environment: the caller's, and over it the
// gateway's, which is not stored (its token is not the caller's to read).
func (s *Service) env(id string, callers map[string]string) map[string]string {
	if s.gateway == nil {
		return callers
	}
	_, channel := s.driver.(driver.Egresser)
	extra := s.gateway.Env(id, channel)
	if len(extra) == 0 {
		return callers
	}
	out := maps.Clone(callers)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, extra)
	return out
}
