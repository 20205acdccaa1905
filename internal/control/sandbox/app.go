package sandbox

import (
	"context"
	"io"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// The app supervisor of a running sandbox, through the door: the agent
// runs the processes of the app's manifest (agentproto/app.go). An agent
// without agentproto.FeatureApp answers agent_too_old.

// AppConfigure starts supervising the app in cfg.Dir, or applies a
// changed cfg.
func (s *Service) AppConfigure(ctx context.Context, id string, cfg agentproto.AppConfig) (agentproto.AppStatus, error) {
	return unary(ctx, s, id, "app.configure", func(ctx context.Context, a *agentclient.Client) (agentproto.AppStatus, error) {
		return a.AppConfigure(ctx, cfg)
	})
}

// AppStatus describes the app's supervision.
func (s *Service) AppStatus(ctx context.Context, id string) (agentproto.AppStatus, error) {
	return unary(ctx, s, id, "app.status", func(ctx context.Context, a *agentclient.Client) (agentproto.AppStatus, error) {
		return a.AppStatus(ctx)
	})
}

// AppReload reads the app's manifest again and applies it; an invalid one
// is the status's ManifestError, not an error.
func (s *Service) AppReload(ctx context.Context, id string) (agentproto.AppStatus, error) {
	return unary(ctx, s, id, "app.reload", func(ctx context.Context, a *agentclient.Client) (agentproto.AppStatus, error) {
		return a.AppReload(ctx)
	})
}

// AppRestart restarts the app's processes named (all when names is
// empty), crashed ones included, after reading the manifest again.
func (s *Service) AppRestart(ctx context.Context, id string, names []string) (agentproto.AppStatus, error) {
	return unary(ctx, s, id, "app.restart", func(ctx context.Context, a *agentclient.Client) (agentproto.AppStatus, error) {
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

// AppLogs streams a process's log as NDJSON agentproto.LogLines: the last
// tail lines, then, with follow, each new one. The call stays open, and
// counts as the sandbox's activity, until Close; it ends when the sandbox
// stops.
func (s *Service) AppLogs(ctx context.Context, id, name string, tail int, follow bool) (io.ReadCloser, error) {
	return s.readBody(ctx, id, "app.logs", func(a *agentclient.Client) (io.ReadCloser, error) {
		return a.AppLogs(ctx, name, tail, follow)
	})
}
