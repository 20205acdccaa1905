package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/internal/control/apps"
)

// openApps builds the apps layer on the sandbox service and ends the
// tasks a restart cut short. Apps answer at <name>.<apps domain> on the
// API's listener, or on the preview URL's scheme and port behind a proxy.
func (s *Server) openApps(ctx context.Context, p *parts) error {
	cfg := s.cfg
	domain := cfg.AppsDomain
	if domain == "" {
		domain = cfg.PreviewDomain
	}
	scheme, port := "http", ""
	if tcp, ok := s.addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	if cfg.PreviewURL != "" {
		if u, err := url.Parse(cfg.PreviewURL); err == nil {
			scheme, port = u.Scheme, u.Port()
		}
	}
	a, err := apps.New(apps.Config{Store: p.store, Sandboxes: p.sandboxes, Sealer: p.sealer, Events: p.events, Log: s.log, Domain: domain, Quotas: p.quotas,
		URL: func(host string) string {
			if port != "" {
				host = net.JoinHostPort(host, port)
			}
			return scheme + "://" + host + "/"
		}})
	if err != nil {
		return fmt.Errorf("apps: %w", err)
	}
	if err := a.Recover(ctx); err != nil {
		s.log.Warn("apps: recovery was incomplete", "err", err)
	}
	s.onClose("apps", func(context.Context) error { a.Close(); return nil })
	p.apps = a
	return nil
}
