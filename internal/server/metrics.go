package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/hutchdev/hutch/internal/edge/telemetry"
)

// listenMetrics opens --metrics-listen, right after the API's listener so
// that a port in use fails the start before anything is made; nil when it
// is not set.
func (s *Server) listenMetrics() (net.Listener, error) {
	if s.cfg.MetricsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--metrics-listen): %w", s.cfg.MetricsListen, err)
	}
	s.onClose("metrics listener", func(context.Context) error { ln.Close(); return nil })
	return ln, nil
}

// openMetrics makes the Prometheus metrics, which count sandboxes
// through the directory.
func (s *Server) openMetrics(_ context.Context, p *parts) (err error) {
	p.metrics, err = telemetry.New(telemetry.Config{Sandboxes: p.directory, Log: s.log})
	return err
}

// serveMetrics serves GET /metrics on ln (nil: nothing to serve) with no
// key: a listener for a scraper on a private network, which must never be
// reachable from anywhere else. Its connections are capped per client as
// the API's are; none ever authenticates, so each is closed after
// --anonymous-idle-timeout idle. Shutdown stops it before the parts it
// reads (the store) close.
func (s *Server) serveMetrics(ln net.Listener, m *telemetry.Metrics) {
	if ln == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.cfg.RequestTimeout,
		WriteTimeout:      s.cfg.RequestTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.serveHTTP("metrics", srv, s.limitConns(ln, srv), nil)
	s.log.Info("metrics serving without a key", "addr", ln.Addr().String())
	if host, _, _ := net.SplitHostPort(s.cfg.MetricsListen); host == "" || isUnspecified(host) {
		s.log.Warn("metrics are served without a key on every interface: keep the port from all but the scraper",
			"addr", ln.Addr().String())
	}
}

// isUnspecified reports whether host is 0.0.0.0 or ::.
func isUnspecified(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}
