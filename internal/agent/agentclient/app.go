package agentclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The app supervisor (agentproto.FeatureApp): an agent without it is not
// asked, and the error is agent_too_old (ErrUnsupported). What the agent
// answers is converted here into what the control plane acts on
// (AppStatus, api.AppProcess, api.AppLogLine): the protocol's types stop
// at this package.

// AppConfig is what the supervisor is asked to run.
type AppConfig struct {
	// Dir is the app directory: a clean absolute path in the sandbox,
	// where the manifest is and where the processes run.
	Dir string
	// Env is added to the processes' environment.
	Env map[string]string
}

// AppStatus is the supervisor's state.
type AppStatus struct {
	// Configured is false until AppConfigure and after AppStop.
	Configured bool
	Dir        string
	// Manifest is what the control plane acts on of the manifest the
	// processes run from: the last good one read, nil before one was.
	Manifest *AppManifest
	// ManifestError says why the file as it is now is not running: set
	// while it is missing or invalid, nil once a good one is read.
	ManifestError *ManifestError
	// Processes are the running manifest's processes, web first, then the
	// workers in the manifest's order.
	Processes []api.AppProcess
}

// AppManifest is what the control plane acts on of an app's manifest.
type AppManifest struct {
	// Web is the web process's, nil for an app of workers alone.
	Web *AppWeb
	// RestartAfterTask names the processes restarted after each task.
	RestartAfterTask []string
	// BuildCommand is the build check's command; nil leaves it to the
	// app's preset, "" skips it. BuildTimeoutS bounds it.
	BuildCommand  *string
	BuildTimeoutS int
}

// AppWeb is what the health checks ask of an app's web process: its
// command (for people), its port,
// the path a health check sends its GET to, and the WebSocket handshake,
// when the manifest names one, that must succeed before a promotion.
type AppWeb struct {
	Command           string
	Port              int
	HealthPath        string
	WebSocketPath     string
	WebSocketProtocol string
}

// ManifestError is why the manifest file was not taken: Code is one of
// agentproto's Manifest… codes; Message names the file and the first
// problem's line.
type ManifestError struct {
	Code    string
	Message string
}

func (e *ManifestError) Error() string { return e.Message }

// AppConfigure starts supervising the app in cfg.Dir, or applies a
// changed cfg; the same cfg again changes nothing.
func (c *Client) AppConfigure(ctx context.Context, cfg AppConfig) (AppStatus, error) {
	return c.app(ctx, "configuring the app", http.MethodPut, "/app", agentproto.AppConfig{Dir: cfg.Dir, Env: cfg.Env})
}

// AppStatus describes the app's supervision: its manifest, the file's
// problems and each process.
func (c *Client) AppStatus(ctx context.Context) (AppStatus, error) {
	return c.app(ctx, "reading the app's status", http.MethodGet, "/app", nil)
}

// AppReload reads the manifest again and applies it. An invalid manifest
// is not an error: the status says it (ManifestError) and the last good
// one goes on running.
func (c *Client) AppReload(ctx context.Context) (AppStatus, error) {
	return c.app(ctx, "reloading the app", http.MethodPost, "/app/reload", nil)
}

// AppRestart reads the manifest again, then restarts the processes named
// (all when names is empty), crashed ones included.
func (c *Client) AppRestart(ctx context.Context, names []string) (AppStatus, error) {
	return c.app(ctx, "restarting the app", http.MethodPost, "/app/restart", agentproto.AppRestartRequest{Names: names})
}

// AppStop stops every app process; supervision is off until AppConfigure.
func (c *Client) AppStop(ctx context.Context) error {
	_, err := c.app(ctx, "stopping the app", http.MethodPost, "/app/stop", nil)
	return err
}

// LogStream is a process's log, line by line.
type LogStream struct {
	body io.ReadCloser
	dec  *json.Decoder
}

// AppLogs streams the last tail lines of a process's log; with follow,
// then each new line until ctx ends or the stream is closed (or
// supervision stops).
func (c *Client) AppLogs(ctx context.Context, name string, tail int, follow bool) (*LogStream, error) {
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
	return &LogStream{body: resp.Body, dec: json.NewDecoder(resp.Body)}, nil
}

// Next returns the next line, io.EOF after the last, or an error of
// class errdefs.ErrUnavailable when the stream broke.
func (l *LogStream) Next() (api.AppLogLine, error) {
	var line agentproto.LogLine
	if err := l.dec.Decode(&line); err != nil {
		if errors.Is(err, io.EOF) {
			return api.AppLogLine{}, io.EOF
		}
		return api.AppLogLine{}, errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the app process's log broke off")
	}
	return api.AppLogLine{Time: line.Time, Stream: line.Stream, Line: line.Line}, nil
}

// Close ends the stream.
func (l *LogStream) Close() error { return l.body.Close() }

// app is one call of the supervisor that answers its status.
func (c *Client) app(ctx context.Context, what, method, path string, in any) (AppStatus, error) {
	if !c.Has(agentproto.FeatureApp) {
		return AppStatus{}, c.tooOld(what, agentproto.FeatureApp)
	}
	var st agentproto.AppStatus
	if err := c.doJSON(ctx, method, path, nil, in, &st); err != nil {
		return AppStatus{}, err
	}
	return appStatus(st), nil
}

// appStatus is the supervisor's status as the control plane acts on it.
func appStatus(st agentproto.AppStatus) AppStatus {
	out := AppStatus{Configured: st.Configured, Dir: st.Dir, Processes: make([]api.AppProcess, 0, len(st.Processes))}
	if e := st.ManifestError; e != nil {
		out.ManifestError = &ManifestError{Code: e.Code, Message: e.Message}
	}
	if m := st.Manifest; m != nil {
		am := &AppManifest{BuildCommand: m.Build.Command, BuildTimeoutS: m.Build.TimeoutSeconds}
		if w := m.Web; w != nil {
			am.Web = &AppWeb{Command: w.Command, Port: w.Port, HealthPath: w.HealthPath, WebSocketPath: w.WebSocketPath, WebSocketProtocol: w.WebSocketProtocol}
		}
		for _, p := range m.Processes() {
			if p.RestartAfterTask {
				am.RestartAfterTask = append(am.RestartAfterTask, p.Name)
			}
		}
		out.Manifest = am
	}
	for _, p := range st.Processes {
		out.Processes = append(out.Processes, api.AppProcess{Name: p.Name, Command: p.Command, Web: p.Web, State: p.State, Pid: p.PID,
			Restarts: p.Restarts, LastExitCode: p.LastExitCode, Message: p.Message, StartedAt: p.StartedAt})
	}
	return out
}
