package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// call sends a JSON request to the API with key and decodes a 2xx answer
// into out; it returns the status and, for an error, its code.
func call(t *testing.T, base, key, method, path string, body, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e api.Error
		_ = json.Unmarshal(b, &e)
		t.Logf("%s %s: %d %s: %s", method, path, resp.StatusCode, e.Error.Code, e.Error.Message)
		return resp.StatusCode, e.Error.Code
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode, ""
}

// mustCall is call that fails the test on anything but want.
func mustCall(t *testing.T, s *server, method, path string, body, out any, want int) {
	t.Helper()
	if st, code := call(t, s.url, s.key, method, path, body, out); st != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, st, code, want)
	}
}

// createApp creates an app and waits, up to patience, until it is ready.
func createApp(t *testing.T, s *server, req api.CreateAppRequest, patience time.Duration) api.App {
	t.Helper()
	var a api.App
	mustCall(t, s, "POST", "/v1/apps", req, &a, http.StatusCreated)
	deadline := time.Now().Add(patience)
	for a.State == api.AppCreating {
		if time.Now().After(deadline) {
			t.Fatalf("app %s still creating after %s", a.Name, patience)
		}
		time.Sleep(250 * time.Millisecond)
		mustCall(t, s, "GET", "/v1/apps/"+a.ID, nil, &a, http.StatusOK)
	}
	if a.State != api.AppReady {
		t.Fatalf("app %s: %s (%s)\n%s", a.Name, a.State, a.Error, s.stderr)
	}
	return a
}

// runTask runs a task and waits for its end.
func runTask(t *testing.T, s *server, appID string, cmd ...string) api.Task {
	t.Helper()
	var task api.Task
	mustCall(t, s, "POST", "/v1/apps/"+appID+"/tasks", api.CreateTaskRequest{Command: cmd}, &task, http.StatusCreated)
	deadline := time.Now().Add(3 * time.Minute)
	for task.EndedAt == nil {
		if time.Now().After(deadline) {
			t.Fatalf("task %v never ended", cmd)
		}
		time.Sleep(200 * time.Millisecond)
		mustCall(t, s, "GET", "/v1/apps/"+appID+"/tasks/"+task.ID, nil, &task, http.StatusOK)
	}
	return task
}

// appGet sends GET path to an app's host on the server with the headers
// given ("Authorization", "Accept", …), and returns the status, the body
// and the Location header.
func appGet(t *testing.T, s *server, app, path string, hdr map[string]string) (int, string, string) {
	t.Helper()
	u, _ := url.Parse(s.url)
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = app + ".localhost:" + u.Port()
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, app, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

// browserSession is one headless Chromium driven by browser/app.mjs.
type browserSession struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

func startBrowser(t *testing.T) *browserSession {
	t.Helper()
	node, chromium := needBrowser(t)
	cmd := exec.Command(node, "app.mjs")
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &browserSession{t: t, in: in, out: bufio.NewScanner(out), cmd: cmd}
	t.Cleanup(func() {
		io.WriteString(in, "quit\n")
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return b
}

// do sends one command and decodes its answer into out; a failed command
// fails the test.
func (b *browserSession) do(out any, args ...string) {
	b.t.Helper()
	if _, err := io.WriteString(b.in, strings.Join(args, " ")+"\n"); err != nil {
		b.t.Fatal(err)
	}
	if !b.out.Scan() {
		b.t.Fatalf("browser: no answer to %v: %v", args, b.out.Err())
	}
	line := b.out.Bytes()
	var st struct {
		OK    bool     `json:"ok"`
		Error string   `json:"error"`
		Logs  []string `json:"logs"`
	}
	if err := json.Unmarshal(line, &st); err != nil || !st.OK {
		b.t.Fatalf("browser %v: %s (%v)", args, line, err)
	}
	if out != nil {
		if err := json.Unmarshal(line, out); err != nil {
			b.t.Fatal(err)
		}
	}
}
