package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// newApps builds the apps layer on the sandbox service and ends the tasks
// a restart cut short. Apps answer at <name>.<apps domain> on the API's
// listener, or on the preview URL's scheme and port behind a proxy.
func newApps(ctx context.Context, cfg config.Config, st store.Store, svc *sandbox.Service, sealer *secrets.Sealer,
	events events.Appender, addr net.Addr, log *slog.Logger) (*apps.Service, error) {
	domain := cfg.AppsDomain
	if domain == "" {
		domain = cfg.PreviewDomain
	}
	scheme, port := "http", ""
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	if cfg.PreviewURL != "" {
		if u, err := url.Parse(cfg.PreviewURL); err == nil {
			scheme, port = u.Scheme, u.Port()
		}
	}
	a, err := apps.New(apps.Config{Store: st, Sandboxes: svc, Sealer: sealer, Events: events, Log: log, Domain: domain,
		URL: func(host string) string {
			if port != "" {
				host = net.JoinHostPort(host, port)
			}
			return scheme + "://" + host + "/"
		}})
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	if err := a.Recover(ctx); err != nil {
		log.Warn("apps: recovery was incomplete", "err", err)
	}
	return a, nil
}
