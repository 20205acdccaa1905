package e2b

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	pb "github.com/hutchdev/hutch/internal/edge/e2b/envdpb/process"
	"github.com/hutchdev/hutch/internal/edge/e2b/envdpb/process/processconnect"
)

// fakeSandboxes is the sandbox service of one sandbox, "sb1", with one
// process whose output it replays: enough for the process service's
// translation. The methods it does not define panic.
type fakeSandboxes struct {
	Sandboxes
	mu      sync.Mutex
	started []api.ProcessRequest
	closed  []int
	signals []api.SignalRequest
	output  []api.OutputEvent
	block   bool // the output stream waits for its context after the events
}

func (f *fakeSandboxes) StartProcess(_ context.Context, id string, req api.ProcessRequest) (api.Process, error) {
	if id != "sb1" {
		return api.Process{}, errdefs.NotFound("sandbox_not_found", "no sandbox %s", id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, req)
	return api.Process{PID: 7, Cmd: req.Cmd, Running: true, PTY: req.PTY != nil}, nil
}

func (f *fakeSandboxes) WriteStdin(_ context.Context, _ string, pid int, body io.Reader, closeAfter bool) (api.Process, error) {
	if closeAfter {
		f.mu.Lock()
		f.closed = append(f.closed, pid)
		f.mu.Unlock()
	}
	return api.Process{PID: pid}, nil
}

func (f *fakeSandboxes) SignalProcess(_ context.Context, _ string, pid int, req api.SignalRequest) (api.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signals = append(f.signals, req)
	return api.Process{PID: pid}, nil
}

func (f *fakeSandboxes) ProcessOutput(ctx context.Context, _ string, _ int, _ int64, _ bool) (sandbox.Stream[api.OutputEvent], error) {
	return &fakeStream{ctx: ctx, events: f.output, block: f.block}, nil
}

type fakeStream struct {
	ctx    context.Context
	events []api.OutputEvent
	block  bool
	closed chan struct{}
	once   sync.Once
}

func (s *fakeStream) Next() (api.OutputEvent, error) {
	s.once.Do(func() { s.closed = make(chan struct{}) })
	if len(s.events) > 0 {
		ev := s.events[0]
		s.events = s.events[1:]
		return ev, nil
	}
	if s.block {
		select {
		case <-s.ctx.Done():
		case <-s.closed:
		}
	}
	return api.OutputEvent{}, io.EOF
}

func (s *fakeStream) Close() error {
	s.once.Do(func() { s.closed = make(chan struct{}) })
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}

// fakeAuth vouches for key "k1", a member of tenant "t1".
type fakeAuth struct{}

func (fakeAuth) Begin(context.Context, string) (context.Context, func(), error) {
	return nil, nil, errdefs.New(errdefs.ErrUnauthorized, "invalid_api_key", "no")
}

func (fakeAuth) BeginKey(ctx context.Context, id string) (context.Context, func(), error) {
	if id != "k1" {
		return nil, nil, errdefs.New(errdefs.ErrUnauthorized, "invalid_api_key", "no")
	}
	return tenancy.With(ctx, tenancy.Principal{TenantID: "t1", KeyID: "k1", Role: api.RoleMember}), func() {}, nil
}

func newTestServer(t *testing.T, f *fakeSandboxes) (*httptest.Server, *Handler) {
	t.Helper()
	h := New(Config{Sandboxes: f, Auth: fakeAuth{}, Key: []byte(strings.Repeat("k", 32)), MaxBodyBytes: 1 << 20,
		Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// TestStartBothCodecs: a command's events reach a Connect client in JSON
// (what the SDK speaks) and in binary protobuf alike: start, stdout and
// stderr in order, then the end with its exit code; its input is closed
// unless it asked for it.
func TestStartBothCodecs(t *testing.T) {
	code := 3
	for _, binary := range []bool{false, true} {
		f := &fakeSandboxes{output: []api.OutputEvent{
			{Type: api.OutputStdout, Data: []byte("out")},
			{Type: api.OutputStderr, Data: []byte("err")},
			{Type: api.OutputExit, Process: &api.Process{PID: 7, ExitCode: &code}},
		}}
		srv, h := newTestServer(t, f)
		var opts []connect.ClientOption
		if !binary {
			opts = append(opts, connect.WithProtoJSON())
		}
		c := processconnect.NewProcessClient(srv.Client(), srv.URL+envdPrefix, opts...)
		req := connect.NewRequest(&pb.StartRequest{Process: &pb.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "x"}, Envs: map[string]string{"A": "1"}}})
		req.Header().Set("E2b-Sandbox-Id", "sb1")
		req.Header().Set("X-Access-Token", h.tokens.sign("k1", "sb1"))
		stream, err := c.Start(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for stream.Receive() {
			switch ev := stream.Msg().GetEvent().GetEvent().(type) {
			case *pb.ProcessEvent_Start:
				got = append(got, fmt.Sprintf("start %d", ev.Start.GetPid()))
			case *pb.ProcessEvent_Data:
				if out := ev.Data.GetStdout(); out != nil {
					got = append(got, "stdout "+string(out))
				} else {
					got = append(got, "stderr "+string(ev.Data.GetStderr()))
				}
			case *pb.ProcessEvent_End:
				got = append(got, "end "+ev.End.GetStatus())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("binary %v: %v", binary, err)
		}
		want := []string{"start 7", "stdout out", "stderr err", "end exit status 3"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("binary %v: events (-want +got):\n%s", binary, diff)
		}
		if diff := cmp.Diff([]string{"/bin/bash", "-l", "-c", "x"}, f.started[0].Cmd); diff != "" {
			t.Errorf("cmd (-want +got):\n%s", diff)
		}
		if len(f.closed) != 1 {
			t.Errorf("stdin closed %d times, want once", len(f.closed))
		}
	}
}

// TestStartDeadline: a command still running at the call's deadline is
// killed, its whole group; keepalives flow while it is quiet.
func TestStartDeadline(t *testing.T) {
	f := &fakeSandboxes{block: true}
	srv, h := newTestServer(t, f)
	c := processconnect.NewProcessClient(srv.Client(), srv.URL+envdPrefix, connect.WithProtoJSON())
	req := connect.NewRequest(&pb.StartRequest{Process: &pb.ProcessConfig{Cmd: "sleep"}, Stdin: new(true)})
	req.Header().Set("E2b-Sandbox-Id", "sb1")
	req.Header().Set("X-Access-Token", h.tokens.sign("k1", "sb1"))
	req.Header().Set("Keepalive-Ping-Interval", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	stream, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	keepalives := 0
	for stream.Receive() {
		if stream.Msg().GetEvent().GetKeepalive() != nil {
			keepalives++
		}
	}
	if code := connect.CodeOf(stream.Err()); code != connect.CodeDeadlineExceeded {
		t.Errorf("stream ended with %v, want deadline_exceeded", stream.Err())
	}
	if keepalives == 0 {
		t.Error("no keepalive while the command was quiet")
	}
	if len(f.closed) != 0 {
		t.Error("stdin was closed though the command asked for it")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		sigs := append([]api.SignalRequest(nil), f.signals...)
		f.mu.Unlock()
		if len(sigs) > 0 {
			if sigs[0] != (api.SignalRequest{Signal: "KILL", Group: true}) {
				t.Errorf("signal %+v, want KILL to the group", sigs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command was not killed at its deadline")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEnvdDoor: an envd call needs its sandbox's own token, from a key
// that exists.
func TestEnvdDoor(t *testing.T) {
	srv, h := newTestServer(t, &fakeSandboxes{})
	for _, c := range []struct {
		name, sandbox, token string
		want                 int
	}{
		{"no sandbox", "", h.tokens.sign("k1", "sb1"), http.StatusUnauthorized},
		{"no token", "sb1", "", http.StatusUnauthorized},
		{"another sandbox's token", "sb1", h.tokens.sign("k1", "sb2"), http.StatusUnauthorized},
		{"tampered", "sb1", "k2" + strings.TrimPrefix(h.tokens.sign("k1", "sb1"), "k1"), http.StatusUnauthorized},
		{"revoked key's", "sb1", h.tokens.sign("k2", "sb1"), http.StatusUnauthorized},
		{"another server's", "sb1", tokens{key: []byte(strings.Repeat("x", 32))}.sign("k1", "sb1"), http.StatusUnauthorized},
		{"unknown user", "sb1", h.tokens.sign("k1", "sb1"), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest("GET", srv.URL+envdPrefix+"/files?path=/x", nil)
		req.Header.Set("E2b-Sandbox-Id", c.sandbox)
		req.Header.Set("X-Access-Token", c.token)
		if c.name == "unknown user" {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("mallory:")))
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, res.StatusCode, c.want)
		}
	}
}

func TestPolicyOf(t *testing.T) {
	no, yes := false, true
	for _, c := range []struct {
		name  string
		allow *bool
		net   *networkConfig
		want  *api.NetworkPolicy
		err   bool
	}{
		{"nothing said", nil, nil, nil, false},
		{"no internet", &no, nil, &api.NetworkPolicy{Egress: api.EgressNone}, false},
		{"internet", &yes, nil, &api.NetworkPolicy{Egress: api.EgressPublic}, false},
		{"allow list", nil, &networkConfig{AllowOut: []string{"a.com"}, DenyOut: []string{allTraffic}}, &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"a.com"}}, false},
		{"deny all", nil, &networkConfig{DenyOut: []string{allTraffic}}, &api.NetworkPolicy{Egress: api.EgressNone}, false},
		{"deny some", nil, &networkConfig{DenyOut: []string{"10.0.0.0/8"}}, nil, true},
		{"rules", nil, &networkConfig{Rules: map[string]any{}}, nil, true},
	} {
		got, err := policyOf(c.allow, c.net)
		if (err != nil) != c.err {
			t.Errorf("%s: error %v", c.name, err)
			continue
		}
		if c.err && !errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("%s: %v, want unsupported", c.name, err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestEntryOf(t *testing.T) {
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := entryOf(api.FileInfo{Name: "d", Path: "/w/d", Type: api.FileDir, Mode: "0755", ModTime: mod})
	if e.GetType().String() != "FILE_TYPE_DIRECTORY" || e.GetPermissions() != "drwxr-xr-x" || e.GetMode() != 0o755 || !e.GetModifiedTime().AsTime().Equal(mod) {
		t.Errorf("dir entry %v", e)
	}
	l := entryOf(api.FileInfo{Path: "/w/l", Type: api.FileSymlink, Mode: "0777", LinkTarget: "/etc"})
	if l.GetName() != "l" || l.GetSymlinkTarget() != "/etc" || l.GetPermissions() != "Lrwxrwxrwx" {
		t.Errorf("link entry %v", l)
	}
}

func TestWatchEvents(t *testing.T) {
	got := watchEvents(api.WatchEvent{Type: api.WatchRename, OldPath: "a", Path: "b"})
	if len(got) != 2 || got[0].GetName() != "a" || got[0].GetType().String() != "EVENT_TYPE_RENAME" || got[1].GetName() != "b" || got[1].GetType().String() != "EVENT_TYPE_CREATE" {
		t.Errorf("rename: %v", got)
	}
	if got := watchEvents(api.WatchEvent{Type: api.WatchOverflow}); got != nil {
		t.Errorf("overflow: %v", got)
	}
}

func TestEndEvent(t *testing.T) {
	zero := 0
	if e := endEvent(&api.Process{ExitCode: &zero}); e.GetExitCode() != 0 || !e.GetExited() || e.GetStatus() != "exit status 0" {
		t.Errorf("exit 0: %v", e)
	}
	if e := endEvent(&api.Process{Signal: "killed"}); e.GetExitCode() != -1 || e.GetExited() || e.GetStatus() != "signal: killed" {
		t.Errorf("killed: %v", e)
	}
}

type fakeKeys []string

func (k fakeKeys) KeyIDs(context.Context, string) ([]string, error) { return k, nil }

// TestSignedURL: a URL signed with a key's token for a file and an
// operation opens that, until its expiration, and nothing else.
func TestSignedURL(t *testing.T) {
	h := New(Config{Keys: fakeKeys{"k0", "k1"}, Key: []byte(strings.Repeat("k", 32)), Log: slog.New(slog.DiscardHandler)})
	sign := func(path, op, user, key, sandbox, exp string) string {
		raw := path + ":" + op + ":" + user + ":" + h.tokens.sign(key, sandbox)
		if exp != "" {
			raw += ":" + exp
		}
		sum := sha256.Sum256([]byte(raw))
		q := url.Values{"path": {path}, "signature": {"v1_" + base64.RawStdEncoding.EncodeToString(sum[:])}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != "" {
			q.Set("signature_expiration", exp)
		}
		return envdPrefix + "/files?" + q.Encode()
	}
	later := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	earlier := strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10)
	for _, c := range []struct {
		name, method, target string
		key                  string // "" for refused
	}{
		{"read", "GET", sign("/w/a", "read", "", "k1", "sb1", ""), "k1"},
		{"write with user and expiration", "POST", sign("/w/a", "write", "user", "k0", "sb1", later), "k0"},
		{"expired", "GET", sign("/w/a", "read", "", "k1", "sb1", earlier), ""},
		{"another operation", "POST", sign("/w/a", "read", "", "k1", "sb1", ""), ""},
		{"another sandbox", "GET", sign("/w/a", "read", "", "k1", "sb2", ""), ""},
		{"a key not the tenant's", "GET", sign("/w/a", "read", "", "k9", "sb1", ""), ""},
		{"another file", "GET", strings.Replace(sign("/w/a", "read", "", "k1", "sb1", ""), "%2Fw%2Fa", "%2Fw%2Fb", 1), ""},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		got, err := h.signedKey(r, "sb1")
		if got != c.key || (c.key == "") != (err != nil) {
			t.Errorf("%s: key %q, %v; want %q", c.name, got, err, c.key)
		}
	}
}

// TestCORS: a page of any origin may call the E2B APIs with the headers
// the SDK sends, and read the ones it reads; no cookies are allowed.
func TestCORS(t *testing.T) {
	srv, _ := newTestServer(t, &fakeSandboxes{})
	for _, path := range []string{Prefix + "/v2/sandboxes", envdPrefix + "/process.Process/Start"} {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+path, nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		// As browsers send it: lowercase, sorted.
		req.Header.Set("Access-Control-Request-Headers", "connect-protocol-version,connect-timeout-ms,content-type,e2b-sandbox-id,keepalive-ping-interval,x-access-token,x-api-key")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode >= 300 || res.Header.Get("Access-Control-Allow-Origin") != "*" || res.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight of %s: %d, headers %v", path, res.StatusCode, res.Header)
		}
		if allowed := strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(allowed, "x-access-token") || !strings.Contains(allowed, "connect-timeout-ms") {
			t.Errorf("preflight of %s allows headers %q (%d %v)", path, allowed, res.StatusCode, res.Header)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+Prefix+"/health", nil)
	req.Header.Set("Origin", "https://app.example")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(strings.ToLower(res.Header.Get("Access-Control-Expose-Headers")), "x-next-token") {
		t.Errorf("a GET from a page: headers %v", res.Header)
	}
}

// createOnly answers Create at once: what is left of a create is the
// translation's own work.
type createOnly struct{ Sandboxes }

func (createOnly) Create(_ context.Context, req api.CreateSandboxRequest) (api.Sandbox, error) {
	return api.Sandbox{ID: "01m88n51g53n0ynr9r53d4p0z6", State: api.StateRunning, Template: "host", TimeoutS: req.TimeoutS}, nil
}

// keyAuth lets every control call in as key k1.
type keyAuth struct{ fakeAuth }

func (keyAuth) Begin(ctx context.Context, _ string) (context.Context, func(), error) {
	return tenancy.With(ctx, tenancy.Principal{TenantID: "t1", KeyID: "k1", Role: api.RoleMember}), func() {}, nil
}

// BenchmarkCreateTranslation is the E2B layer's own cost of a create
// (decode, translate, sign the envd token, encode), with a sandbox service
// that answers at once; bench/e2b times the whole call.
func BenchmarkCreateTranslation(b *testing.B) {
	h := New(Config{Sandboxes: createOnly{}, Auth: keyAuth{}, Key: []byte(strings.Repeat("k", 32)), MaxBodyBytes: 1 << 20,
		Log: slog.New(slog.DiscardHandler)})
	body := `{"templateID":"base","timeout":300,"metadata":{"a":"b"},"envVars":{"X":"1"}}`
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, Prefix+"/v2/sandboxes", strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", w.Code, w.Body)
		}
	}
}
