package agentclient

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The app supervisor (agentproto.FeatureApp): an agent without it is not
// asked, and the error is agent_too_old (ErrUnsupported).

// AppConfigure starts supervising the app in cfg.Dir, or applies a
// changed cfg; the same cfg again changes nothing.
func (c *Client) AppConfigure(ctx context.Context, cfg agentproto.AppConfig) (agentproto.AppStatus, error) {
	return c.app(ctx, "configuring the app", http.MethodPut, "/app", cfg)
}

// AppStatus describes the app's supervision: its manifest, the file's
// problems and each process.
func (c *Client) AppStatus(ctx context.Context) (agentproto.AppStatus, error) {
	return c.app(ctx, "reading the app's status", http.MethodGet, "/app", nil)
}

// AppReload reads the manifest again and applies it. An invalid manifest
// is not an error: the status says it (ManifestError) and the last good
// one goes on running.
func (c *Client) AppReload(ctx context.Context) (agentproto.AppStatus, error) {
	return c.app(ctx, "reloading the app", http.MethodPost, "/app/reload", nil)
}

// AppRestart reads the manifest again, then restarts the processes named
// (all when names is empty), crashed ones included.
func (c *Client) AppRestart(ctx context.Context, names []string) (agentproto.AppStatus, error) {
	return c.app(ctx, "restarting the app", http.MethodPost, "/app/restart", agentproto.AppRestartRequest{Names: names})
}

// AppStop stops every app process; supervision is off until AppConfigure.
func (c *Client) AppStop(ctx context.Context) error {
	_, err := c.app(ctx, "stopping the app", http.MethodPost, "/app/stop", nil)
	return err
}

// AppLogs streams the last tail lines of a process's log as NDJSON
// agentproto.LogLines; with follow, then each new line until ctx ends or
// the body is closed (or supervision stops).
func (c *Client) AppLogs(ctx context.Context, name string, tail int, follow bool) (io.ReadCloser, error) {
	if !c.Has(agentproto.FeatureApp) {
		return nil, c.tooOld("reading an app process's logs", agentproto.FeatureApp)
	}
	if name == "" || url.PathEscape(name) != name || name == "." || name == ".." {
		return nil, errdefs.NotFound("app_process_not_found", "the app has no process %q", name)
	}
	q := url.Values{"tail": {strconv.Itoa(tail)}}
	if follow {
		q.Set("follow", "true")
	}
	resp, err := c.do(ctx, http.MethodGet, "/app/processes/"+name+"/logs", q, nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// app is one call of the supervisor that answers its status.
func (c *Client) app(ctx context.Context, what, method, path string, in any) (agentproto.AppStatus, error) {
	var st agentproto.AppStatus
	if !c.Has(agentproto.FeatureApp) {
		return st, c.tooOld(what, agentproto.FeatureApp)
	}
	err := c.doJSON(ctx, method, path, nil, in, &st)
	return st, err
}
