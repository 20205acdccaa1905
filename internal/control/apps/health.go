package apps

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// checkTimeout bounds one HTTP or WebSocket check.
const checkTimeout = 10 * time.Second

// health checks the app in sandbox id as role: every process of its
// manifest running, "/" answering 200 as the router would ask for it, and
// a WebSocket handshake where the manifest declares a path. It returns
// every check, passed or not, and whether all passed.
func (s *Service) health(ctx context.Context, a *store.App, id, role string) ([]api.Check, bool) {
	var checks []api.Check
	add := func(name string, err error) {
		c := api.Check{Name: name, OK: err == nil}
		if err != nil {
			c.Message = err.Error()
		}
		checks = append(checks, c)
	}
	st, err := s.settled(ctx, id)
	if err == nil {
		err = processesRunning(st)
	}
	add("processes", err)
	if err != nil || st.Manifest == nil || st.Manifest.Web == nil {
		return checks, allOK(checks)
	}
	web := st.Manifest.Web
	add("http", s.checkHTTP(ctx, a, id, role, web.Port, "/"))
	if web.HealthPath != "/" {
		add("health_path", s.checkHTTP(ctx, a, id, role, web.Port, web.HealthPath))
	}
	if web.WebSocketPath != "" {
		add("websocket", s.checkWebSocket(ctx, a, id, role, web.Port, web.WebSocketPath, web.WebSocketProtocol))
	}
	return checks, allOK(checks)
}

func allOK(checks []api.Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// settleWait bounds how long a check waits for processes that just
// started (or just ended) to settle into running, backoff or crashed.
const settleWait = 10 * time.Second

// settled is the supervisor's status once no process is starting or just
// exited, or as it is after settleWait.
func (s *Service) settled(ctx context.Context, id string) (sandbox.AppStatus, error) {
	deadline := time.Now().Add(settleWait)
	for {
		st, err := s.sbx.AppStatus(ctx, id)
		if err != nil || !transient(st) || time.Now().After(deadline) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// transient reports whether a process is starting or just exited.
func transient(st sandbox.AppStatus) bool {
	for _, p := range st.Processes {
		if p.State == api.AppProcessStarting || p.State == api.AppProcessExited {
			return true
		}
	}
	return false
}

// processesRunning says which process of the manifest is not running.
func processesRunning(st sandbox.AppStatus) error {
	if st.ManifestError != nil && st.Manifest == nil {
		return fmt.Errorf("sandbox.yaml is invalid: %v", st.ManifestError)
	}
	var down []string
	for _, p := range st.Processes {
		if p.State != api.AppProcessRunning {
			d := p.Name + " is " + p.State
			if p.Message != "" {
				d += " (" + p.Message + ")"
			}
			down = append(down, d)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("%s", strings.Join(down, "; "))
	}
	return nil
}

// request is a request for path as the router sends it to role: the
// app's public host, and for dev the prefix it stripped.
func (s *Service) request(ctx context.Context, a *store.App, role, method, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+a.Name+"."+s.cfg.Domain+path, nil)
	if err != nil {
		return nil, err
	}
	if role == api.RoleDev {
		req.Header.Set("X-Forwarded-Prefix", "/dev")
	}
	return req, nil
}

// checkHTTP sends GET path to the sandbox's port through a tunnel and
// wants a 200.
func (s *Service) checkHTTP(ctx context.Context, a *store.App, id, role string, port int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := s.request(ctx, a, role, http.MethodGet, path)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/html,*/*")
	tr := &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return s.sbx.DialTunnel(ctx, id, port) },
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %s", path, resp.Status)
	}
	return nil
}

// checkWebSocket opens a WebSocket at path (with the subprotocol the
// manifest names, if any) and wants 101 Switching Protocols.
func (s *Service) checkWebSocket(ctx context.Context, a *store.App, id, role string, port int, path, protocol string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := s.sbx.DialTunnel(ctx, id, port)
	if err != nil {
		return fmt.Errorf("WebSocket %s: %w", path, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	req, err := s.request(ctx, a, role, http.MethodGet, path)
	if err != nil {
		return err
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	if protocol != "" {
		req.Header.Set("Sec-WebSocket-Protocol", protocol)
	}
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("WebSocket %s: %w", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fmt.Errorf("WebSocket %s: %w", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("WebSocket %s answered %s", path, resp.Status)
	}
	return nil
}

// waitHealthy checks role's sandbox until every check passes, patience
// runs out or ctx ends, and returns the last checks.
func (s *Service) waitHealthy(ctx context.Context, a *store.App, id, role string, patience time.Duration) ([]api.Check, bool) {
	deadline := time.Now().Add(patience)
	for {
		checks, ok := s.health(ctx, a, id, role)
		if ok || time.Now().After(deadline) || ctx.Err() != nil {
			return checks, ok
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// servePoll is how often waitServing tries a web process that does not
// answer yet.
const servePoll = 100 * time.Millisecond

// waitServing waits until the web process of role's sandbox id answers
// GET on its health path with 200, sent as the router sends a request. It
// fails once deadline passes, with what the last try met, and at once
// when the supervisor has given the process up (crashed: it is not
// started again until something changes); either error ends with the
// process's last lines of log, since a failed create keeps no sandbox to
// read them from. A manifest without a web process has nothing to wait
// for.
func (s *Service) waitServing(ctx context.Context, a *store.App, id, role string, deadline time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		st, err := s.sbx.AppStatus(ctx, id)
		if err != nil {
			return fmt.Errorf("the %s sandbox's app status: %w", role, err)
		}
		if st.Manifest == nil || st.Manifest.Web == nil {
			return nil
		}
		web, p := st.Manifest.Web, webProcess(st)
		if p.State == api.AppProcessCrashed {
			return fmt.Errorf("the %s sandbox's web process (%s) crashed: %s%s", role, web.Command, p.Message, s.logTail(ctx, id, p.Name))
		}
		err = s.checkHTTP(wctx, a, id, role, web.Port, web.HealthPath)
		if err == nil {
			return nil
		}
		select {
		case <-time.After(servePoll):
			continue
		case <-wctx.Done():
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the %s sandbox's web process (%s, %s) did not serve on port %d within %s: %w%s",
			role, web.Command, p.State, web.Port, s.cfg.ReadyTimeout, err, s.logTail(ctx, id, p.Name))
	}
}

// webProcess is the supervisor's web process, or a zero one when it
// reports none.
func webProcess(st sandbox.AppStatus) api.AppProcess {
	for _, p := range st.Processes {
		if p.Web {
			return p
		}
	}
	return api.AppProcess{}
}

// logTailLines is how many lines of a process's log an error quotes.
const logTailLines = 10

// logTail is the last lines of process name's log in sandbox id, on lines
// of their own after a colon, or "" when there are none or they cannot be
// read.
func (s *Service) logTail(ctx context.Context, id, name string) string {
	if name == "" {
		return ""
	}
	logs, err := s.sbx.AppLogs(ctx, id, name, logTailLines, false)
	if err != nil {
		return ""
	}
	defer logs.Close()
	var lines []string
	for len(lines) < logTailLines {
		l, err := logs.Next()
		if err != nil {
			break
		}
		lines = append(lines, l.Line)
	}
	if len(lines) == 0 {
		return ""
	}
	return ":\n" + tail(strings.Join(lines, "\n"), 2000)
}
