package agentclient_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

const token = "client-test-token-0123456789abcdef"

// provingServer serves h on a Unix socket, proving itself with token as
// the agent does, and returns a client for it.
func provingServer(t *testing.T, h http.HandlerFunc) *agentclient.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "hutch-client-test-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce := r.Header.Get(agentproto.HeaderNonce)
		if r.Header.Get(agentproto.HeaderAuth) != agentproto.RequestMAC(token, nonce, r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get(agentproto.HeaderBody)) {
			t.Errorf("request %s %s is not signed", r.Method, r.URL.Path)
		}
		w.Header().Set(agentproto.HeaderProof, agentproto.Proof(token, nonce))
		h(w, r)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go srv.Serve(ln)
	c := agentclient.New("unix", sock, token)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		os.RemoveAll(dir)
	})
	return c
}

// TestErrorAnswers: the class, code and message of an error answer reach
// the caller through errdefs.FromHTTP.
func TestErrorAnswers(t *testing.T) {
	tests := []struct {
		status int
		body   string
		class  error
		code   string
		msg    string
	}{
		{409, `{"error":{"code":"file_exists","message":"/w/x already exists"}}`, errdefs.ErrConflict, "file_exists", "/w/x already exists"},
		{413, `{"error":{"code":"file_too_large","message":"big"}}`, errdefs.ErrTooLarge, "file_too_large", "big"},
		{404, `{"error":{"code":"file_not_found","message":"gone"}}`, errdefs.ErrNotFound, "file_not_found", "gone"},
		{401, `{"error":{"code":"unauthorized","message":"no"}}`, errdefs.ErrUnauthorized, "unauthorized", "no"},
		{503, `not json`, errdefs.ErrUnavailable, "agent_error", "the agent answered 503 Service Unavailable"},
	}
	for _, tt := range tests {
		c := provingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tt.status)
			io.WriteString(w, tt.body)
		})
		_, err := c.Stat(context.Background(), "x")
		var e *errdefs.Error
		if !errors.As(err, &e) || !errors.Is(err, tt.class) || e.Code != tt.code || e.Message != tt.msg {
			t.Errorf("status %d: error %#v, want class %v code %s message %q", tt.status, err, tt.class, tt.code, tt.msg)
		}
	}
}

func TestRequests(t *testing.T) {
	var got []string
	c := provingServer(t, func(w http.ResponseWriter, r *http.Request) {
		// Uploads come framed, with their MAC at the end.
		body := io.Reader(r.Body)
		if r.Header.Get(agentproto.HeaderBody) == agentproto.BodyFramed {
			body = agentproto.UnframeBody(r.Body, token, r.Header.Get(agentproto.HeaderNonce))
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Errorf("%s %s: body: %v", r.Method, r.URL, err)
		}
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		switch r.URL.Path {
		case "/files":
			if r.Method == http.MethodDelete {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			io.WriteString(w, `{"name":"x","path":"/w/x","type":"file","size":4,"mode":"0600","mod_time":"2025-01-01T00:00:00Z"}`)
		case "/files/tar":
			io.WriteString(w, `{"path":"/w/d","files":1,"bytes":2}`)
		default:
			io.WriteString(w, `{}`)
		}
	})
	ctx := context.Background()
	fi, err := c.WriteFile(ctx, "x y", "0600", false, strings.NewReader("data"))
	if err != nil || fi.Size != 4 || fi.Mode != "0600" {
		t.Errorf("WriteFile = %+v, %v", fi, err)
	}
	if err := c.Remove(ctx, "/w/x", true); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if res, err := c.TarUpload(ctx, "d", strings.NewReader("tar")); err != nil || res.Files != 1 {
		t.Errorf("TarUpload = %+v, %v", res, err)
	}
	if _, err := c.Move(ctx, api.MoveRequest{From: "a", To: "b", Overwrite: true}); err != nil {
		t.Errorf("Move: %v", err)
	}
	want := []string{
		"PUT /files?mode=0600&path=x+y data",
		"DELETE /files?path=%2Fw%2Fx&recursive=true ",
		"PUT /files/tar?path=d tar",
		`POST /files/move {"from":"a","to":"b","overwrite":true}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExecStreamBroken: a stream that ends before its exit event is an
// error, not a silent success.
func TestExecStreamBroken(t *testing.T) {
	c := provingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"type":"stdout","data":"aGk="}`+"\n")
	})
	s, err := c.Exec(context.Background(), api.ExecRequest{Cmd: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.Type != api.ExecStdout || string(ev.Data) != "hi" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	_, err = s.Next()
	var e *errdefs.Error
	if !errors.As(err, &e) || e.Code != "agent_stream_broken" {
		t.Errorf("Next after a cut stream: %v, want agent_stream_broken", err)
	}
	if _, again := s.Next(); again != err {
		t.Errorf("Next after the error: %v, want the same error %v", again, err)
	}
}
