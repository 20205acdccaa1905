package agent

import (
	"io"
	"net/http"

	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// handleBootstrap answers a warm agent's POST /bootstrap: the body is the
// sandbox's envelope sealed for this agent's token (envelope.Seal); it is
// opened, checked and handed to Config.Bootstrap, once (204). Another is
// a conflict.
func (s *Server) handleBootstrap(w http.ResponseWriter, r *http.Request) {
	sealed, err := io.ReadAll(io.LimitReader(r.Body, envelope.MaxSize+1024))
	if err != nil {
		s.writeError(w, r, errdefs.Invalid("invalid_body", "read the envelope: %v", err))
		return
	}
	e, err := envelope.Open(sealed, s.cfg.Token)
	if err != nil {
		s.writeError(w, r, errdefs.Invalid("invalid_envelope", "%v", err))
		return
	}
	taken := false
	s.bootstrapOnce.Do(func() {
		taken = true
		s.cfg.Bootstrap(e)
	})
	if !taken {
		s.writeError(w, r, errdefs.Conflict("agent_bootstrapped", "the agent has its sandbox already"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
