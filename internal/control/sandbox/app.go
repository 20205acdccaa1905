package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/control/quota"
)

// The app supervisor of a running sandbox, through the door: the agent
// runs the processes of the app's manifest. An agent without an app
// supervisor answers agent_too_old.

// The supervisor's configuration and status, as the agent client reads
// them from its agent.
type (
	AppConfig     = agentclient.AppConfig
	AppStatus     = agentclient.AppStatus
	AppManifest   = agentclient.AppManifest
	AppWeb        = agentclient.AppWeb
	ManifestError = agentclient.ManifestError
)

// AppConfigure starts supervising the app in cfg.Dir, or applies a
// changed cfg.
func (s *Service) AppConfigure(ctx context.Context, id string, cfg AppConfig) (AppStatus, error) {
	return unary(ctx, s, id, "app.configure", func(ctx context.Context, a *agentclient.Client) (AppStatus, error) {
		return a.AppConfigure(ctx, cfg)
	})
}

// AppStatus describes the app's supervision.
func (s *Service) AppStatus(ctx context.Context, id string) (AppStatus, error) {
	return unary(ctx, s, id, "app.status", func(ctx context.Context, a *agentclient.Client) (AppStatus, error) {
		return a.AppStatus(ctx)
	})
}

// AppReload reads the app's manifest again and applies it; an invalid one
// is the status's ManifestError, not an error.
func (s *Service) AppReload(ctx context.Context, id string) (AppStatus, error) {
	return unary(ctx, s, id, "app.reload", func(ctx context.Context, a *agentclient.Client) (AppStatus, error) {
		return a.AppReload(ctx)
	})
}

// AppRestart restarts the app's processes named (all when names is
// empty), crashed ones included, after reading the manifest again.
func (s *Service) AppRestart(ctx context.Context, id string, names []string) (AppStatus, error) {
	return unary(ctx, s, id, "app.restart", func(ctx context.Context, a *agentclient.Client) (AppStatus, error) {
		return a.AppRestart(ctx, names)
	})
}

// AppStop stops the app's processes and their supervision.
func (s *Service) AppStop(ctx context.Context, id string) error {
	_, err := unary(ctx, s, id, "app.stop", func(ctx context.Context, a *agentclient.Client) (struct{}, error) {
		return struct{}{}, a.AppStop(ctx)
	})
	return err
}

// AppLogs streams a process's log: the last tail lines, then, with
// follow, each new one. The call stays open, and counts as the sandbox's
// activity, until Close; it ends when the sandbox stops.
func (s *Service) AppLogs(ctx context.Context, id, name string, tail int, follow bool) (Stream[api.AppLogLine], error) {
	c, err := s.openHeld(ctx, id, "app.logs", quota.Stream)
	if err != nil {
		return nil, err
	}
	st, err := c.agent.AppLogs(ctx, name, tail, follow)
	if err != nil {
		return nil, c.end(err)
	}
	return &stream[api.AppLogLine]{c: c, next: st.Next, close: st.Close}, nil
}
