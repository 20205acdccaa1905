package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

func TestRequestEncoding(t *testing.T) {
	f := newFake(t)
	f.addSandboxes(1, nil) // s001
	c := f.client(client.WithUserAgent("hutch-test/1"))
	ctx := t.Context()

	tests := []struct {
		name string
		call func() error
		want recorded
	}{
		{
			name: "create sandbox",
			call: func() error {
				_, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{
					Template: "host", Limits: &api.Limits{MemoryMB: 256}, Labels: map[string]string{"team": "a"},
				})
				return err
			},
			want: recorded{Method: "POST", Path: "/v1/sandboxes", ContentType: "application/json",
				Body: []byte(`{"template":"host","limits":{"memory_mb":256},"labels":{"team":"a"}}`)},
		},
		{
			name: "list with filters",
			call: func() error {
				_, err := c.ListSandboxes(ctx, client.ListOptions{
					State: api.StateRunning, Labels: map[string]string{"b": "2", "a": "x=y"}, Limit: 5, Cursor: "s000",
				})
				return err
			},
			want: recorded{Method: "GET", Path: "/v1/sandboxes", RawQuery: "cursor=s000&label=a%3Dx%3Dy&label=b%3D2&limit=5&state=running"},
		},
		{
			name: "stop",
			call: func() error { _, err := c.StopSandbox(ctx, "s001"); return err },
			want: recorded{Method: "POST", Path: "/v1/sandboxes/s001/stop"},
		},
		{
			name: "exec",
			call: func() error {
				_, err := c.Exec(ctx, "s001", api.ExecRequest{Cmd: []string{"echo", "hi"}, TimeoutMS: 1500})
				return err
			},
			want: recorded{Method: "POST", Path: "/v1/sandboxes/s001/exec", ContentType: "application/json",
				Body: []byte(`{"cmd":["echo","hi"],"timeout_ms":1500}`)},
		},
		{
			name: "write file",
			call: func() error {
				_, err := c.WriteFile(ctx, "s001", "/work/a b&c.txt", 0o755, strings.NewReader("data"))
				return err
			},
			want: recorded{Method: "PUT", Path: "/v1/sandboxes/s001/files", RawQuery: "mode=0755&path=%2Fwork%2Fa+b%26c.txt",
				ContentType: "application/octet-stream", Body: []byte("data")},
		},
		{
			name: "remove recursive",
			call: func() error { return c.RemoveFile(ctx, "s001", "/tmp/d", true) },
			want: recorded{Method: "DELETE", Path: "/v1/sandboxes/s001/files", RawQuery: "path=%2Ftmp%2Fd&recursive=true"},
		},
		{
			name: "upload tar",
			call: func() error { _, err := c.UploadTar(ctx, "s001", "/app", strings.NewReader("tarbytes")); return err },
			want: recorded{Method: "PUT", Path: "/v1/sandboxes/s001/files/tar", RawQuery: "path=%2Fapp",
				ContentType: "application/x-tar", Body: []byte("tarbytes")},
		},
		{
			name: "create key",
			call: func() error {
				_, err := c.CreateKey(ctx, api.CreateKeyRequest{Name: "ci", Role: api.RoleMember})
				return err
			},
			want: recorded{Method: "POST", Path: "/v1/keys", ContentType: "application/json", Body: []byte(`{"name":"ci","role":"member"}`)},
		},
		{
			name: "escaped id",
			call: func() error { _, err := c.GetSandbox(ctx, "a/b?c"); return err },
			want: recorded{Method: "GET", Path: "/v1/sandboxes/a%2Fb%3Fc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.reset()
			err := tt.call()
			if err != nil && !client.IsNotFound(err) {
				t.Fatalf("call: %v", err)
			}
			got := f.last()
			tt.want.Auth = "Bearer " + testKey
			tt.want.UserAgent = "hutch-test/1"
			if tt.want.Body == nil {
				tt.want.Body = []byte{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBasePathPrefixAndHealth(t *testing.T) {
	f := newFake(t)
	if err := client.New(f.srv.URL+"/", "").Health(t.Context()); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if got := f.last(); got.Path != "/healthz" || got.Auth != "" {
		t.Errorf("health request = %+v, want /healthz without auth", got)
	}
	for _, bad := range []string{"127.0.0.1:7070", "ftp://x", "http://"} {
		if _, err := client.New(bad, "k").Info(t.Context()); err == nil {
			t.Errorf("New(%q).Info: no error", bad)
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFake(t)
	ctx := t.Context()
	c := f.client()

	tests := []struct {
		name      string
		call      func() error
		want      *client.Error
		notFound  bool
		conflict  bool
		unauthzed bool
	}{
		{
			name:     "unknown sandbox",
			call:     func() error { _, err := c.GetSandbox(ctx, "nope"); return err },
			want:     &client.Error{StatusCode: 404, Code: "sandbox_not_found", Message: "sandbox nope not found"},
			notFound: true,
		},
		{
			name: "conflict",
			call: func() error {
				f.addSandboxes(1, nil)
				_, err := c.Move(ctx, "s001", api.MoveRequest{From: "/a", To: "/b"})
				return err
			},
			want:     &client.Error{StatusCode: 409, Code: "file_exists", Message: "/b exists"},
			conflict: true,
		},
		{
			name:      "bad key",
			call:      func() error { _, err := client.New(f.srv.URL, "wrong").Info(ctx); return err },
			want:      &client.Error{StatusCode: 401, Code: "invalid_api_key", Message: "invalid API key"},
			unauthzed: true,
		},
		{
			name: "not the API's shape",
			call: func() error { _, err := client.New(f.srv.URL+"/bad-gateway", testKey).Info(ctx); return err },
			want: &client.Error{StatusCode: 502, Message: "server answered 502 Bad Gateway: <html> <body>upstream down</body></html>"},
		},
		{
			name:     "key not found",
			call:     func() error { return c.DeleteKey(ctx, "k9") },
			want:     &client.Error{StatusCode: 404, Code: "key_not_found", Message: "no key k9"},
			notFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var got *client.Error
			if !errors.As(err, &got) {
				t.Fatalf("error %v (%T) is not a *client.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if client.IsNotFound(err) != tt.notFound || client.IsConflict(err) != tt.conflict || client.IsUnauthorized(err) != tt.unauthzed {
				t.Errorf("helpers: IsNotFound=%v IsConflict=%v IsUnauthorized=%v", client.IsNotFound(err), client.IsConflict(err), client.IsUnauthorized(err))
			}
			if client.Code(err) != tt.want.Code {
				t.Errorf("Code = %q, want %q", client.Code(err), tt.want.Code)
			}
		})
	}
	if got := (&client.Error{Code: "file_exists", Message: "/b exists"}).Error(); got != "/b exists (file_exists)" {
		t.Errorf("Error() = %q", got)
	}
	if err := c.DeleteSandbox(ctx, ""); err == nil {
		t.Error("DeleteSandbox with an empty id: no error")
	}
}

func TestExecStreamIncremental(t *testing.T) {
	f := newFake(t)
	f.addSandboxes(1, nil)
	f.streamStep = make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	s, err := f.client().ExecStream(ctx, "s001", api.ExecRequest{Cmd: []string{"exit", "3"}})
	if err != nil {
		t.Fatalf("ExecStream: %v", err)
	}
	defer s.Close()

	// The server has sent only the first event and waits on streamStep:
	// Next must return it without the rest of the body.
	ev, err := s.Next()
	if err != nil {
		t.Fatalf("Next 1: %v", err)
	}
	if diff := cmp.Diff(api.ExecEvent{Type: api.ExecStdout, Data: []byte("hello ")}, ev); diff != "" {
		t.Errorf("event 1 (-want +got):\n%s", diff)
	}
	if s.Result() != nil {
		t.Error("Result before the exit event is not nil")
	}
	f.streamStep <- struct{}{}
	ev, err = s.Next()
	if err != nil {
		t.Fatalf("Next 2: %v", err)
	}
	if diff := cmp.Diff(api.ExecEvent{Type: api.ExecStderr, Data: []byte("oops\xff")}, ev); diff != "" {
		t.Errorf("event 2 (-want +got):\n%s", diff)
	}
	f.streamStep <- struct{}{}
	ev, err = s.Next()
	if err != nil {
		t.Fatalf("Next 3: %v", err)
	}
	if ev.Type != api.ExecExit || ev.Exit == nil || ev.Exit.ExitCode != 3 {
		t.Errorf("event 3 = %+v, want exit 3", ev)
	}
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("Next after exit = %v, want io.EOF", err)
	}
	if r := s.Result(); r == nil || r.ExitCode != 3 {
		t.Errorf("Result = %+v, want exit 3", r)
	}
}

func TestExecStreamCopyAndCancel(t *testing.T) {
	f := newFake(t)
	f.addSandboxes(1, nil)
	c := f.client()

	s, err := c.ExecStream(t.Context(), "s001", api.ExecRequest{Cmd: []string{"x", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	res, err := s.Copy(&out, &errb)
	if err != nil || res.ExitCode != 0 || out.String() != "hello " || errb.String() != "oops\xff" {
		t.Errorf("Copy = %+v, %v; stdout %q stderr %q", res, err, out.String(), errb.String())
	}

	// A cancelled context ends a stream blocked in Next.
	f.streamStep = make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	s, err = c.ExecStream(ctx, "s001", api.ExecRequest{Cmd: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, want context.Canceled", err)
	}

	// Errors before the stream starts are *client.Error.
	_, err = c.ExecStream(t.Context(), "nope", api.ExecRequest{Cmd: []string{"x"}})
	if client.Code(err) != "sandbox_not_found" {
		t.Errorf("ExecStream on unknown sandbox = %v", err)
	}
}

func TestExecStreamTruncated(t *testing.T) {
	srv := newRawServer(t, "application/x-ndjson", `{"type":"stdout","data":"aGk="}`+"\n")
	s, err := client.New(srv, testKey).ExecStream(t.Context(), "s1", api.ExecRequest{Cmd: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || string(ev.Data) != "hi" {
		t.Fatalf("Next = %+v, %v", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Next at early end = %v, want io.ErrUnexpectedEOF", err)
	}
}

// newRawServer answers every request with body as contentType.
func newRawServer(t *testing.T, contentType, body string) string {
	t.Helper()
	f := newFake(t)
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	})
	return f.srv.URL
}

func TestAllSandboxesWalksPages(t *testing.T) {
	f := newFake(t)
	f.addSandboxes(5, map[string]string{"team": "a"})
	f.addSandboxes(2, map[string]string{"team": "b"})
	c := f.client()
	f.reset()

	var ids []string
	for sb, err := range c.AllSandboxes(t.Context(), client.ListOptions{Labels: map[string]string{"team": "a"}, Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sb.ID)
	}
	if diff := cmp.Diff([]string{"s001", "s002", "s003", "s004", "s005"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	var queries []string
	for _, r := range f.requests {
		queries = append(queries, r.RawQuery)
	}
	want := []string{
		"label=team%3Da&limit=2",
		"cursor=s002&label=team%3Da&limit=2",
		"cursor=s004&label=team%3Da&limit=2",
	}
	if diff := cmp.Diff(want, queries); diff != "" {
		t.Errorf("page queries (-want +got):\n%s", diff)
	}

	// Breaking out of the loop stops fetching.
	f.reset()
	for range c.AllSandboxes(t.Context(), client.ListOptions{Limit: 2}) {
		break
	}
	if len(f.requests) != 1 {
		t.Errorf("%d requests after break, want 1", len(f.requests))
	}

	// An error ends the walk.
	n := 0
	for _, err := range client.New(f.srv.URL, "wrong").AllSandboxes(t.Context(), client.ListOptions{}) {
		n++
		if !client.IsUnauthorized(err) {
			t.Errorf("err = %v, want 401", err)
		}
	}
	if n != 1 {
		t.Errorf("%d values after an error, want 1", n)
	}
}

func TestFilesRoundTrip(t *testing.T) {
	f := newFake(t)
	f.addSandboxes(1, nil)
	c := f.client()
	ctx := t.Context()

	// The request body is streamed and a caller's closer is not closed.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("part one, "))
		pw.Write([]byte("part two"))
		pw.Close()
	}()
	fi, err := c.WriteFile(ctx, "s001", "/w/f.txt", 0o600, pr)
	if err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if fi.Size != 18 || fi.Mode != "0600" {
		t.Errorf("FileInfo = %+v", fi)
	}

	tmp, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	tmp.WriteString("from a file")
	tmp.Seek(0, io.SeekStart)
	if _, err := c.WriteFile(ctx, "s001", "/w/g.txt", 0, tmp); err != nil {
		t.Fatalf("WriteFile from *os.File: %v", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		t.Errorf("caller's file was closed: %v", err)
	}
	if q := f.last().RawQuery; q != "path=%2Fw%2Fg.txt" {
		t.Errorf("query with zero mode = %q", q)
	}

	rc, err := c.ReadFile(ctx, "s001", "/w/f.txt")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(b) != "part one, part two" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if _, err := c.ReadFile(ctx, "s001", "/missing"); client.Code(err) != "file_not_found" {
		t.Errorf("ReadFile missing = %v", err)
	}
}

func TestFormatMode(t *testing.T) {
	for m, want := range map[os.FileMode]string{
		0o644:                        "0644",
		0o755 | os.ModeDir:           "0755",
		0o777 | os.ModeSticky:        "1777",
		0o755 | os.ModeSetuid:        "4755",
		0o2750 & os.ModePerm:         "0750",
		0o750 | os.ModeSetgid:        "2750",
		0:                            "0000",
		os.ModeSymlink | os.ModePerm: "0777",
	} {
		if got := client.FormatMode(m); got != want {
			t.Errorf("FormatMode(%v) = %q, want %q", m, got, want)
		}
	}
}
