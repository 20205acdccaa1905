package sandbox

import (
	"maps"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Gateway is the provider gateway as the service sees it
// (internal/edge/gateway): the environment a sandbox's processes call it
// with, through the sandbox's egress proxy, the only way to it.
type Gateway interface {
	Env(sandboxID string) map[string]string
}

// env is a new sandbox's environment: the caller's, and over it the
// gateway's when the sandbox has an egress channel. The gateway's part is
// not stored: its token is the sandbox's, not the caller's to read.
func (s *Service) env(d driver.Driver, id string, callers map[string]string) map[string]string {
	if _, channel := d.(driver.Egresser); !channel || s.gateway == nil {
		return callers
	}
	out := maps.Clone(callers)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, s.gateway.Env(id))
	return out
}
