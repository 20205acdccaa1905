package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// fakeStore holds sandboxes and port settings, and resolves previews from
// them as the sandbox service does (sandbox.Service.Preview).
type fakeStore struct {
	mu    sync.Mutex
	sbs   map[string]*store.Sandbox
	ports map[Target]bool
	reads int    // Preview calls
	onGet func() // if set, called (unlocked) by Preview before it reads
}

func (f *fakeStore) Preview(ctx context.Context, id string, port int) (sandbox.Preview, error) {
	f.mu.Lock()
	on := f.onGet
	f.mu.Unlock()
	if on != nil {
		on()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	sb, ok := f.sbs[id]
	if !ok {
		return sandbox.Preview{}, store.SandboxNotFound(id)
	}
	return sandbox.Preview{TenantID: sb.TenantID, State: sb.State, Public: f.ports[Target{id, port}]}, nil
}

func (f *fakeStore) SetPort(ctx context.Context, p *store.PortSetting) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[Target{p.SandboxID, p.Port}] = p.Public
	return nil
}

func (f *fakeStore) setState(id string, s api.SandboxState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sbs[id].State = s
}

// fakeAuth knows four keys, three of tenant a; with sessions set, it
// counts its checks, and a key's requests can be ended as a revocation ends
// them.
type fakeAuth struct{ sessions *fakeSessions }

const (
	keyA  = "hk_aaaa_secret"
	keyA2 = "hk_aaa2_secret"
	keyB  = "hk_bbbb_secret"
	keyR  = "hk_rrrr_secret" // tenant a's, read-only
)

// fakePrincipals are fakeAuth's keys' principals, by key id.
var fakePrincipals = map[string]tenancy.Principal{
	"aaaa": {TenantID: "tenant-a", KeyID: "aaaa", Role: api.RoleMember},
	"aaa2": {TenantID: "tenant-a", KeyID: "aaa2", Role: api.RoleMember},
	"bbbb": {TenantID: "tenant-b", KeyID: "bbbb", Role: api.RoleMember},
	"rrrr": {TenantID: "tenant-a", KeyID: "rrrr", Role: api.RoleReader},
}

func (f fakeAuth) Begin(ctx context.Context, header string) (context.Context, func(), error) {
	var p tenancy.Principal
	if id, ok := strings.CutPrefix(header, "Bearer hk_"); ok && strings.HasSuffix(id, "_secret") {
		p = fakePrincipals[strings.TrimSuffix(id, "_secret")]
	}
	return f.begin(ctx, p)
}

func (f fakeAuth) BeginKey(ctx context.Context, id string) (context.Context, func(), error) {
	return f.begin(ctx, fakePrincipals[id])
}

func (f fakeAuth) begin(ctx context.Context, p tenancy.Principal) (context.Context, func(), error) {
	invalid := errdefs.New(errdefs.ErrUnauthorized, "invalid_api_key", "invalid API key")
	if f.sessions == nil {
		if p.KeyID == "" {
			return nil, nil, invalid
		}
		return tenancy.With(ctx, p), func() {}, nil
	}
	return f.sessions.begin(ctx, p, invalid)
}

// fakeSessions are the requests fakeAuth let in, by key id, as
// auth.Authenticator keeps them: a revoked key ends its requests and
// begins no more.
type fakeSessions struct {
	mu      sync.Mutex
	open    map[string]map[*context.CancelFunc]bool
	revoked map[string]bool
	checks  int // Begin and BeginKey calls
}

func (s *fakeSessions) begin(ctx context.Context, p tenancy.Principal, invalid error) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	if p.KeyID == "" || s.revoked[p.KeyID] {
		return nil, nil, invalid
	}
	if s.open == nil {
		s.open = map[string]map[*context.CancelFunc]bool{}
	}
	if s.open[p.KeyID] == nil {
		s.open[p.KeyID] = map[*context.CancelFunc]bool{}
	}
	ctx, cancel := context.WithCancel(tenancy.With(ctx, p))
	h := &cancel
	s.open[p.KeyID][h] = true
	return ctx, func() {
		s.mu.Lock()
		delete(s.open[p.KeyID], h)
		s.mu.Unlock()
		cancel()
	}, nil
}

// revoke ends every request of keyID; its key begins no more.
func (s *fakeSessions) revoke(keyID string) {
	s.mu.Lock()
	if s.revoked == nil {
		s.revoked = map[string]bool{}
	}
	s.revoked[keyID] = true
	var cancels []context.CancelFunc
	for h := range s.open[keyID] {
		cancels = append(cancels, *h)
	}
	delete(s.open, keyID)
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// held is how many of keyID's requests are held, and how many checks
// were made of any key.
func (s *fakeSessions) held(keyID string) (held, checks int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open[keyID]), s.checks
}

const (
	idRunning = "01jq3v9x7k2m4n6p8r0s2t4v6w"
	idStopped = "01jq3v9x7k2m4n6p8r0s2t4v6x"
	idMissing = "01jq3v9x7k2m4n6p8r0s2t4v6y"
	idProcess = "01jq3v9x7k2m4n6p8r0s2t4v6z"
	appPort   = 3000
	shutPort  = 3001
)

// env is a router in front of a backend that plays the sandbox's program.
type env struct {
	t     testing.TB
	st    *fakeStore
	rt    *Router
	srv   *httptest.Server // the router (and a stand-in API)
	app   *httptest.Server // the sandbox's program
	logs  *testutil.Buffer
	now   time.Time
	dials int
	mu    sync.Mutex
	// sessions are the requests API keys let in (fakeAuth).
	sessions *fakeSessions
}

func newEnv(t testing.TB) *env {
	t.Helper()
	app := httptest.NewServer(testApp())
	t.Cleanup(app.Close)
	e := &env{t: t, app: app, logs: &testutil.Buffer{}, now: time.Now(), sessions: &fakeSessions{}}
	e.st = &fakeStore{
		sbs: map[string]*store.Sandbox{
			idRunning: {ID: idRunning, TenantID: "tenant-a", State: api.StateRunning},
			idStopped: {ID: idStopped, TenantID: "tenant-a", State: api.StateStopped},
			idProcess: {ID: idProcess, TenantID: "tenant-a", State: api.StateRunning},
		},
		ports: map[Target]bool{},
	}
	dial := DialFunc(func(ctx context.Context, id string, port int) (net.Conn, error) {
		e.mu.Lock()
		e.dials++
		e.mu.Unlock()
		switch {
		case id == idProcess:
			return nil, errdefs.FromHTTP(http.StatusNotImplemented, "previews_unsupported", "no network of its own")
		case port == shutPort:
			return nil, errdefs.FromHTTP(http.StatusBadGateway, "port_closed", "nothing listens")
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", app.Listener.Addr().String())
	})
	rt, err := New(Config{
		Domain:     "localhost",
		Key:        bytes.Repeat([]byte{1}, KeyBytes),
		Sandboxes:  e.st,
		Auth:       fakeAuth{sessions: e.sessions},
		Tunnels:    dial,
		Log:        slog.New(slog.NewJSONHandler(e.logs, nil)),
		MaxRetries: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	e.rt = rt
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "the API")
	})
	e.srv = httptest.NewServer(rt.Wrap(api))
	t.Cleanup(e.srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router log:\n%s", e.logs)
		}
	})
	return e
}

// testApp is the sandbox's program: headers as JSON, an event stream, a
// WebSocket echo.
func testApp() http.Handler {
	mux := http.NewServeMux()
	page := bytes.Repeat([]byte("a"), 1024)
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write(page)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("/hints", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "page")
	})
	// raw answers, byte for byte, then closes the connection.
	raw := func(answer string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			brw.WriteString(answer)
			brw.Flush()
		}
	}
	// A keep-alive answer on a connection the app then closes.
	mux.HandleFunc("/closing", raw("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	// A body that ends where the connection does.
	mux.HandleFunc("/unbounded", raw("HTTP/1.1 200 OK\r\n\r\nhello"))
	mux.HandleFunc("/bighead", raw("HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", maxResponseHead)+"\r\nContent-Length: 0\r\n\r\n"))
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"host": r.Host, "uri": r.RequestURI, "headers": r.Header})
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 5; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			c.Write(r.Context(), typ, append([]byte("echo: "), b...))
		}
	})
	return mux
}

func host(id string, port int) string {
	return fmt.Sprintf("%d-%s.localhost", port, id)
}

// get sends a request for path on the preview host of id and port.
func (e *env) get(id string, port int, path string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host(id, port) + ":" + e.srv.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func wantStatus(t testing.TB, what string, resp *http.Response, body string, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, resp.StatusCode, status, body)
	}
	if code != "" {
		var e api.Error
		if json.Unmarshal([]byte(body), &e); e.Error.Code != code {
			t.Fatalf("%s: code %q, want %q; body %s", what, e.Error.Code, code, body)
		}
	}
}
