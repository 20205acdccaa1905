package httpapi

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// goTypes are what a message must never show: the names of Go types.
var goTypes = regexp.MustCompile(`\bGo\b|\bapi\.|map\[|\[\]|\bint(8|16|32|64)?\b|\buint|\bstruct\b|\bfloat64\b`)

// TestErrorShape: whatever goes wrong, the answer is the one error shape
// with a stable code and a message a person can act on.
func TestErrorShape(t *testing.T) {
	f := newAPIFixture(t)
	sb := f.sandbox(t)
	files := "/v1/sandboxes/" + sb.ID + "/files"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, allow              string
	}{
		{"unknown route", "GET", "/v1/nope", "", 404, "unknown_route", ""},
		{"root", "GET", "/", "", 404, "unknown_route", ""},
		{"wrong method", "DELETE", "/v1/info", "", 405, "method_not_allowed", "GET"},
		{"wrong method on a sandbox", "PATCH", "/v1/sandboxes/" + sb.ID, "", 405, "method_not_allowed", "GET, DELETE"},
		{"misspelt filter", "GET", "/v1/sandboxes?lable=team", "", 400, "unknown_parameter", ""},
		{"misspelt mode", "PUT", files + "?path=m.txt&mdoe=0600", "x", 400, "unknown_parameter", ""},
		{"a parameter where none is taken", "GET", "/v1/info?verbose=1", "", 400, "unknown_parameter", ""},
		{"string for a number", "POST", "/v1/sandboxes", `{"limits":{"memory_mb":"big"}}`, 400, "invalid_json", ""},
		{"array for an object", "POST", "/v1/sandboxes", `[1]`, 400, "invalid_json", ""},
		{"array for labels", "POST", "/v1/sandboxes", `{"labels":["a"]}`, 400, "invalid_json", ""},
		{"number out of range", "POST", "/v1/sandboxes", `{"timeout_s":1e30}`, 400, "invalid_json", ""},
		{"write without parents", "PUT", files + "?path=no/such/dir.txt&parents=false", "x", 404, "file_not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, e := f.raw(t, tc.method, tc.path, tc.body)
			if status != tc.status || e.Code != tc.code || e.Message == "" {
				t.Fatalf("%d %+v; want %d %s with a message", status, e, tc.status, tc.code)
			}
			if goTypes.MatchString(e.Message) {
				t.Errorf("message %q names a Go type", e.Message)
			}
			if tc.allow != "" && h.Get("Allow") != tc.allow {
				t.Errorf("Allow %q; want %q", h.Get("Allow"), tc.allow)
			}
		})
	}
	// The refused write made nothing.
	if _, err := f.ca.StatFile(f.ctx, sb.ID, "m.txt"); !client.IsNotFound(err) {
		t.Errorf("a write refused for its parameters left a file: %v", err)
	}
}

// TestSandboxRoutes: a sandbox's life through the API, seen by its tenant
// and hidden from another.
func TestSandboxRoutes(t *testing.T) {
	f := newAPIFixture(t)
	sb, err := f.ca.CreateSandbox(f.ctx, api.CreateSandboxRequest{Env: map[string]string{"GREETING": "hi"}, Labels: map[string]string{"team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != api.StateRunning || sb.Driver != "fake" || sb.Limits.MemoryMB != 256 {
		t.Fatalf("created %+v", sb)
	}
	other := f.sandbox(t)
	page, err := f.ca.ListSandboxes(f.ctx, client.ListOptions{Labels: map[string]string{"team": "x"}})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != sb.ID {
		t.Fatalf("list by label = %+v, %v", page, err)
	}
	if _, err := f.cb.GetSandbox(f.ctx, sb.ID); client.Code(err) != "sandbox_not_found" {
		t.Fatalf("another tenant's get = %v; want sandbox_not_found", err)
	}
	if err := f.cb.DeleteSandbox(f.ctx, sb.ID); client.Code(err) != "sandbox_not_found" {
		t.Fatalf("another tenant's delete = %v; want sandbox_not_found", err)
	}

	res, err := f.ca.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo $GREETING; echo err >&2; exit 3"}})
	if err != nil || res.Stdout != "hi\n" || res.Stderr != "err\n" || res.ExitCode != 3 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	st, err := f.ca.ExecStream(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo one; echo two"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := st.Copy(&out, io.Discard); err != nil || res.ExitCode != 0 || out.String() != "one\ntwo\n" {
		t.Fatalf("exec stream = %q, %+v, %v", out.String(), res, err)
	}

	if got, err := f.ca.StopSandbox(f.ctx, sb.ID); err != nil || got.State != api.StateStopped {
		t.Fatalf("stop = %+v, %v", got, err)
	}
	if _, err := f.ca.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); client.Code(err) != "sandbox_not_running" {
		t.Fatalf("exec on a stopped sandbox = %v", err)
	}
	if got, err := f.ca.StartSandbox(f.ctx, sb.ID); err != nil || got.State != api.StateRunning {
		t.Fatalf("start = %+v, %v", got, err)
	}
	if err := f.ca.DeleteSandbox(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ca.GetSandbox(f.ctx, sb.ID); err != nil || got.State != api.StateDestroyed {
		t.Fatalf("after delete: %+v, %v", got, err)
	}
	if _, err := f.ca.StartSandbox(f.ctx, sb.ID); !client.IsConflict(err) {
		t.Fatalf("start of a destroyed sandbox = %v; want a conflict", err)
	}
	if live := f.drv.Live(); !slices.Equal(live, []string{other.ID}) {
		t.Fatalf("agents running: %v; want only %s", live, other.ID)
	}
	info, err := f.ca.Info(f.ctx)
	if err != nil || info.Driver != "fake" || info.Version != "test" {
		t.Fatalf("info = %+v, %v", info, err)
	}
}

// TestFileRoutes: the file API end to end, through the service and the
// sandbox's agent.
func TestFileRoutes(t *testing.T) {
	f := newAPIFixture(t)
	sb := f.sandbox(t)
	id := sb.ID
	if _, err := f.ca.WriteFile(f.ctx, id, "deep/er/notes.txt", 0o600, strings.NewReader("hello")); err != nil {
		t.Fatalf("write with its parents made: %v", err)
	}
	rc, err := f.ca.ReadFile(f.ctx, id, "deep/er/notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
	fi, err := f.ca.StatFile(f.ctx, id, "deep/er/notes.txt")
	if err != nil || fi.Size != 5 || fi.Mode != "0600" {
		t.Fatalf("stat = %+v, %v", fi, err)
	}
	if _, err := f.ca.Mkdir(f.ctx, id, api.MkdirRequest{Path: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.Move(f.ctx, id, api.MoveRequest{From: "deep/er/notes.txt", To: "other/moved.txt"}); err != nil {
		t.Fatal(err)
	}
	list, err := f.ca.ListFiles(f.ctx, id, "other")
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Name != "moved.txt" {
		t.Fatalf("list = %+v, %v", list, err)
	}

	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("a"))
	tw.Close()
	if res, err := f.ca.UploadTar(f.ctx, id, "up", &tb); err != nil || res.Files != 1 {
		t.Fatalf("tar upload = %+v, %v", res, err)
	}
	rc, err = f.ca.DownloadTar(f.ctx, id, "up")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	rc.Close()
	if !slices.Contains(names, "a.txt") {
		t.Fatalf("tar download holds %v", names)
	}
	if err := f.ca.RemoveFile(f.ctx, id, "other", false); client.Code(err) == "" {
		t.Fatal("removed a full directory without recursive")
	}
	if err := f.ca.RemoveFile(f.ctx, id, "other", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.StatFile(f.ctx, id, "other"); !client.IsNotFound(err) {
		t.Fatalf("stat after remove = %v", err)
	}
	if _, err := f.cb.StatFile(f.ctx, id, "up/a.txt"); client.Code(err) != "sandbox_not_found" {
		t.Fatalf("another tenant's stat = %v", err)
	}
}

// TestProcessRoutes: background processes, their stdin and output, and a
// terminal.
func TestProcessRoutes(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", "read x; echo got $x"}, Tag: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.WriteStdin(f.ctx, id, p.PID, strings.NewReader("it\n"), true); err != nil {
		t.Fatal(err)
	}
	done, err := f.ca.WaitProcess(f.ctx, id, p.PID, 10*time.Second)
	if err != nil || done.Running || done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("wait = %+v, %v", done, err)
	}
	var out bytes.Buffer
	if _, err := f.ca.CopyOutput(f.ctx, id, p.PID, 0, &out, io.Discard); err != nil || out.String() != "got it\n" {
		t.Fatalf("output = %q, %v", out.String(), err)
	}
	sleeper, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.ca.ListProcesses(f.ctx, id)
	if err != nil || len(list.Processes) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := f.ca.SignalProcess(f.ctx, id, sleeper.PID, "KILL", false); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ca.WaitProcess(f.ctx, id, sleeper.PID, 10*time.Second); err != nil || got.Signal != "SIGKILL" {
		t.Fatalf("killed process = %+v, %v", got, err)
	}
	if _, err := f.ca.GetProcess(f.ctx, id, 999999); !client.IsNotFound(err) {
		t.Fatalf("unknown process = %v", err)
	}

	term, err := f.ca.OpenTerminal(f.ctx, id, client.TerminalOptions{Cmd: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if err := term.Resize(f.ctx, api.TermSize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if err := term.Input(f.ctx, []byte("stty size; exit 7\n")); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	for {
		o, err := term.Next(f.ctx)
		if err != nil {
			t.Fatalf("terminal ended before its exit: %v (screen %q)", err, screen.String())
		}
		screen.Write(o.Data)
		if o.Message != nil && o.Message.Type == api.TerminalExit {
			if o.Message.Process == nil || o.Message.Process.ExitCode == nil || *o.Message.Process.ExitCode != 7 {
				t.Fatalf("exit message %+v", o.Message)
			}
			break
		}
	}
	if !strings.Contains(screen.String(), "30 100") {
		t.Fatalf("screen %q; want the resized size", screen.String())
	}
}

// TestWatchRoute: a watch reports a file written through the API.
func TestWatchRoute(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	w, err := f.ca.WatchFiles(f.ctx, id, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := f.ca.WriteFile(f.ctx, id, "seen.txt", 0, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("watch ended: %v", err)
		}
		if ev.Path == "seen.txt" {
			return
		}
	}
}

// TestStreamsEndWithTheirClient: a client that walks away from a stream
// leaves nothing running for it on the server (the output relay used to
// leak a goroutine per abandoned stream).
func TestStreamsEndWithTheirClient(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do echo tick; sleep 0.01; done"}})
	if err != nil {
		t.Fatal(err)
	}
	settle := func() int {
		time.Sleep(200 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	before := settle()
	const n = 40
	for range n {
		st, err := f.ca.ProcessOutput(f.ctx, id, p.PID, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Next(); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	// Each stream held several goroutines at both ends while it ran; once
	// they are closed the count comes back, give or take the idle
	// connections the client keeps.
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := settle()
		if after < before+n/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before %d abandoned streams, %d after", before, n, after)
		}
	}
}

// TestShutdownEndsStreams: the drain ends every kind of stream at once,
// so the server shuts down without waiting on any; each client sees its
// stream end.
func TestShutdownEndsStreams(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	var nexts []func() error
	exec, err := f.ca.ExecStream(f.ctx, id, api.ExecRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	nexts = append(nexts, func() error { _, err := exec.Next(); return err })
	out, err := f.ca.ProcessOutput(f.ctx, id, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	nexts = append(nexts, func() error { _, err := out.Next(); return err })
	w, err := f.ca.WatchFiles(f.ctx, id, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	nexts = append(nexts, func() error { _, err := w.Next(); return err })
	events, err := f.ca.StreamEvents(f.ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	nexts = append(nexts, func() error {
		for {
			if _, err := events.Next(); err != nil {
				return err
			}
		}
	})
	term, err := f.ca.AttachTerminal(f.ctx, id, p.PID, 0)
	if err != nil {
		t.Fatal(err)
	}
	nexts = append(nexts, func() error {
		for {
			if _, err := term.Next(f.ctx); err != nil {
				return err
			}
		}
	})
	ended := make(chan error, len(nexts))
	for _, next := range nexts {
		go func() { ended <- next() }()
	}
	f.drain()
	if err := f.srv.Config.Shutdown(f.ctx); err != nil {
		t.Fatalf("shutdown with streams open: %v", err)
	}
	for range nexts {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("a stream outlived the shutdown")
		}
	}
}
