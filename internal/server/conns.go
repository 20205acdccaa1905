package server

import (
	"net"
	"net/http"

	"github.com/hutchdev/hutch/internal/base/connlimit"
)

// limitConns caps the connections each client address holds on ln, which
// srv is to serve (--max-conns-per-client): at the cap a new connection
// closes the client's oldest idle one, and one on which no request showed
// a valid key is closed after --anonymous-idle-timeout idle
// (internal/base/connlimit). It sets srv's hooks by which the listener
// learns which connections are idle and which authenticated, and returns
// the listener to serve.
func (s *Server) limitConns(ln net.Listener, srv *http.Server) net.Listener {
	l := connlimit.New(ln, connlimit.Config{
		PerClient:     s.cfg.MaxConnsPerClient,
		AnonymousIdle: s.cfg.AnonymousIdleTimeout,
		Log:           s.log,
	})
	srv.ConnState, srv.ConnContext = l.ConnState, l.ConnContext
	return l
}
