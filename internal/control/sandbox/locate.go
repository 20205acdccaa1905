package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
)

// NodeOf returns the node that runs the caller's sandbox id: the one
// whose drivers made it and which alone holds its agent's connection
// (internal/edge/forward carries other nodes' requests there). "" is a
// sandbox recorded before nodes, this node's, and one unavailable (its
// node lost), which any node answers as such. Another tenant's sandbox
// is 404 sandbox_not_found. It reads the record this service keeps for a
// second (records.go), so a request for a sandbox here costs no read.
func (s *Service) NodeOf(ctx context.Context, id string) (string, error) {
	rec, err := s.record(ctx, id)
	if err != nil {
		return "", err
	}
	if rec.State == api.StateUnavailable {
		return "", nil
	}
	return rec.Node, nil
}
