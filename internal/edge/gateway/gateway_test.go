package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// theKey is the provider key the tests look for wherever it must not be.
const theKey = "sk-live-GATEWAY-KEY-7f3a"

// env is a gateway over a real store and secret service, with one tenant
// holding the key and one running sandbox in it.
type env struct {
	t        *testing.T
	st       store.Store
	sec      *secrets.Service
	gw       *Gateway
	logs     *testutil.Buffer
	tenant   context.Context // a member of the sandbox's tenant
	sandbox  string
	upstream *upstream
}

// upstream is a provider stand-in on loopback that keeps what it saw.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

func (u *upstream) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("the upstream saw no request")
	}
	return u.seen[len(u.seen)-1], u.body[len(u.body)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

func startUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, r)
		u.body = append(u.body, string(b))
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// newEnv starts an upstream with h and a gateway whose providers are
// given by mk from the upstream's URL.
func newEnv(t *testing.T, h http.HandlerFunc, mk func(base string) []Provider) *env {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mk32 := func() []byte {
		b := make([]byte, 32)
		rand.Read(b)
		return b
	}
	sealer, err := secrets.NewSealer(mk32())
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &env{t: t, st: st, sec: secrets.New(secrets.Config{}, st, sealer, events.New(st, events.Config{}), log), logs: logs}
	e.tenant = e.newTenant("a")
	if _, err := e.sec.Create(e.tenant, secrets.Spec{Name: "UP_KEY"}, secrets.NewValue([]byte(theKey))); err != nil {
		t.Fatal(err)
	}
	e.sandbox = e.newSandbox(e.tenant)
	e.upstream = startUpstream(t, h)
	provs, err := completed(mk(e.upstream.URL + "/api/v2"))
	if err != nil {
		t.Fatal(err)
	}
	e.gw, err = New(Config{Providers: provs, Key: mk32(), Sandboxes: sandbox.NewDirectory(st), Keys: e.sec, Events: events.New(st, events.Config{}), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.gw.Close)
	return e
}

// completed runs the file checks on providers built in code.
func completed(ps []Provider) ([]Provider, error) {
	for i := range ps {
		if err := ps[i].complete(); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

func (e *env) newTenant(name string) context.Context {
	e.t.Helper()
	tn, _, _, err := auth.CreateTenant(tenancy.System(context.Background()), e.st, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
}

// newSandbox records a running sandbox in ctx's tenant.
func (e *env) newSandbox(ctx context.Context) string {
	e.t.Helper()
	sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "namespace"}
	if err := e.st.CreateSandbox(ctx, sb); err != nil {
		e.t.Fatal(err)
	}
	return sb.ID
}

func (e *env) setState(id string, s api.SandboxState) {
	e.t.Helper()
	if _, err := e.st.UpdateSandbox(tenancy.System(context.Background()), id, func(sb *store.Sandbox) error {
		sb.State = s
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
}

// channel is the gateway as sandbox id sees it through its egress channel,
// served on loopback.
func (e *env) channel(id string) *httptest.Server {
	srv := httptest.NewServer(e.gw.ForSandbox(id))
	e.t.Cleanup(srv.Close)
	return srv
}

// send sends a request to srv and returns the answer and its body.
func send(t *testing.T, srv *httptest.Server, method, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func wantRefused(t *testing.T, what string, resp *http.Response, body string, status int, code string) {
	t.Helper()
	var e api.Error
	if resp.StatusCode != status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != code {
		t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, body, status, code)
	}
}

// events are the sandbox's provider.call events, once there are n: a
// call is audited just after its answer ends.
func (e *env) events(ctx context.Context, id string, n int) []store.Event {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		evs, _, err := e.st.ListEvents(ctx, store.EventQuery{SandboxID: id, Types: []string{api.EventProviderCall}})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
	}
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func oneProvider(base string) []Provider {
	return []Provider{{Name: "up", BaseURL: base, Secret: "UP_KEY"}}
}

func echo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// TestKeyInjected: the upstream sees the real key in place of every
// credential the caller sent, none of the caller's identifying headers,
// and the caller's path, query and body; the call is audited without the
// key.
func TestKeyInjected(t *testing.T) {
	e := newEnv(t, echo, oneProvider)
	tok := e.gw.Env(e.sandbox)[api.EnvProviderToken]
	srv := e.channel(e.sandbox)
	body := `{"model":"m","messages":[]}`
	resp, got := send(t, srv, "POST", "/provider/v1/up/chat/completions?stream=false", body, map[string]string{
		"Authorization":     "Bearer " + tok,
		"X-Api-Key":         tok,
		"Api-Key":           "something-else",
		"Cookie":            "session=abc",
		"X-Forwarded-For":   "10.1.2.3",
		"Forwarded":         "for=10.1.2.3",
		"X-Hutch-Sandbox":   e.sandbox,
		"X-Custom-Token":    "carry " + tok,
		"Proxy-Connection":  "keep-alive",
		"Anthropic-Version": "2023-06-01",
		"Content-Type":      "application/json",
	})
	if resp.StatusCode != 200 || got != `{"ok":true}` {
		t.Fatalf("call: %d %s", resp.StatusCode, got)
	}
	r, seenBody := e.upstream.last(t)
	if r.URL.Path != "/api/v2/chat/completions" || r.URL.RawQuery != "stream=false" || seenBody != body {
		t.Errorf("upstream saw %s ? %s body %q", r.URL.Path, r.URL.RawQuery, seenBody)
	}
	if a := r.Header.Values("Authorization"); len(a) != 1 || a[0] != "Bearer "+theKey {
		t.Errorf("upstream's Authorization: %q, want the real key", a)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, tokenPrefix) || strings.Contains(v, e.sandbox) || strings.Contains(v, "10.1.2.3") || strings.Contains(v, "session=") {
				t.Errorf("upstream saw the caller's %s: %q", k, v)
			}
		}
	}
	for _, h := range []string{"X-Api-Key", "Api-Key", "Cookie", "X-Forwarded-For", "Forwarded", "X-Hutch-Sandbox", "X-Custom-Token", "Proxy-Connection"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("upstream saw %s: %q", h, v)
		}
	}
	if r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("upstream lost the caller's API headers: %v", r.Header)
	}

	evs := e.events(e.tenant, e.sandbox, 1)
	if len(evs) != 1 {
		t.Fatalf("events: %+v", evs)
	}
	d := evs[0].Data
	if d["provider"] != "up" || d["status"] != float64(200) || d["path"] != "/chat/completions" || d["method"] != "POST" ||
		d["bytes_out"] != float64(len(body)) || d["bytes_in"] != float64(len(`{"ok":true}`)) || d["latency_ms"] == nil {
		t.Errorf("audit event: %q %v", evs[0].Message, d)
	}
	raw, _ := json.Marshal(evs)
	for what, text := range map[string]string{"events": string(raw), "log": e.logs.String(), "answer": got} {
		if strings.Contains(text, theKey) {
			t.Errorf("the key is in the %s", what)
		}
	}
	if !strings.Contains(e.logs.String(), `"msg":"provider call"`) {
		t.Errorf("no audit log line: %s", e.logs)
	}
}

// TestTokens: a channel takes only its own sandbox's token, while that
// sandbox runs.
func TestTokens(t *testing.T) {
	e := newEnv(t, echo, oneProvider)
	other := e.newSandbox(e.tenant)
	env := e.gw.Env(e.sandbox)
	tok := env[api.EnvProviderToken]
	if len(env) != 1 || !strings.HasPrefix(tok, tokenPrefix+e.sandbox+".") {
		t.Errorf("env %v, want the sandbox's token alone", env)
	}
	ch := e.channel(e.sandbox)
	const path = "/provider/v1/up/models"

	for _, h := range []map[string]string{
		bearer(tok),
		{"X-Api-Key": tok},
		{"Api-Key": tok},
		{"Authorization": "bearer " + tok},
	} {
		if resp, body := send(t, ch, "GET", path, "", h); resp.StatusCode != 200 {
			t.Errorf("its token in %v: %d %s", h, resp.StatusCode, body)
		}
	}
	otherKey := make([]byte, 32)
	foreign, err := New(Config{Key: otherKey})
	if err != nil {
		t.Fatal(err)
	}
	for what, hdr := range map[string]map[string]string{
		"no token":                       nil,
		"the provider's key":             bearer(theKey),
		"a forged token":                 bearer(tok[:len(tok)-2] + "xx"),
		"another server's token":         bearer(foreign.Env(e.sandbox)[api.EnvProviderToken]),
		"another sandbox's token":        bearer(e.gw.Env(other)[api.EnvProviderToken]),
		"a token without its MAC":        bearer(tokenPrefix + e.sandbox),
		"a token for another ID and MAC": bearer(tokenPrefix + other + "." + strings.SplitN(tok, ".", 2)[1]),
	} {
		resp, body := send(t, ch, "GET", path, "", hdr)
		wantRefused(t, what, resp, body, 401, "provider_token_invalid")
	}
	e.setState(e.sandbox, api.StateStopped)
	resp, body := send(t, ch, "GET", path, "", bearer(tok))
	wantRefused(t, "a stopped sandbox", resp, body, 401, "sandbox_not_running")
	if n := e.upstream.count(); n != 4 {
		t.Errorf("the upstream saw %d calls, want the 4 accepted", n)
	}
}

// TestRefusals: unknown providers, paths that would leave the base URL,
// a missing key, a registry secret as a key and an oversized body are
// refused before the upstream, and audited.
func TestRefusals(t *testing.T) {
	e := newEnv(t, echo, func(base string) []Provider {
		return []Provider{{Name: "up", BaseURL: base, Secret: "UP_KEY", MaxRequestBytes: 64},
			{Name: "nokey", BaseURL: base, Secret: "NOT_SET"},
			{Name: "regkey", BaseURL: base, Secret: "GHCR"}}
	})
	if _, err := e.sec.Create(e.tenant, secrets.Spec{Name: "GHCR", Kind: api.SecretKindRegistry, Registry: "ghcr.io"},
		secrets.NewValue([]byte("ghcr-password"))); err != nil {
		t.Fatal(err)
	}
	tok := bearer(e.gw.Env(e.sandbox)[api.EnvProviderToken])
	ch := e.channel(e.sandbox)

	resp, body := send(t, ch, "GET", "/provider/v1/nope/x", "", tok)
	wantRefused(t, "unknown provider", resp, body, 404, "provider_not_found")
	for _, p := range []string{"/provider/v1/up/%2e%2e/x", "/provider/v1/up/a/%2E%2e", "/provider/v1/up/a%2fb",
		"/provider/v1/up/a%5c..", "/provider/v1/up/./x", "/provider/v1/up/x%00"} {
		resp, body := send(t, ch, "GET", p, "", tok)
		wantRefused(t, p, resp, body, 400, "invalid_provider_path")
	}
	// A literal ".." reaches a handler only from a client that does not
	// clean paths; send it raw.
	conn, err := net.Dial("tcp", ch.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /provider/v1/up/../../admin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+e.gw.Env(e.sandbox)[api.EnvProviderToken]+"\r\nConnection: close\r\n\r\n")
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	conn.Close()
	if err != nil || raw.StatusCode != 400 {
		t.Errorf("raw ../: %v %v", raw, err)
	}
	resp, body = send(t, ch, "GET", "/provider/v1/nokey/x", "", tok)
	wantRefused(t, "no key", resp, body, 404, "provider_key_missing")
	// A registry password goes to its registry alone.
	resp, body = send(t, ch, "GET", "/provider/v1/regkey/x", "", tok)
	wantRefused(t, "a registry secret", resp, body, 503, "provider_key_invalid")
	resp, body = send(t, ch, "POST", "/provider/v1/up/x", strings.Repeat("a", 1000), tok)
	wantRefused(t, "oversized body", resp, body, 413, "body_too_large")
	if n := e.upstream.count(); n != 0 {
		t.Errorf("the upstream saw %d calls", n)
	}
	evs := e.events(e.tenant, e.sandbox, 10)
	refused := map[string]int{}
	for _, ev := range evs {
		if c, _ := ev.Data["refused"].(string); c != "" {
			refused[c]++
		}
	}
	if refused["provider_not_found"] != 1 || refused["invalid_provider_path"] != 7 || refused["provider_key_missing"] != 1 {
		t.Errorf("refusals audited: %v", refused)
	}
}

// TestSharedKey: a provider whose key the operator keeps in one tenant
// serves sandboxes of every tenant, and each tenant's own secret of the
// same name does not change it.
func TestSharedKey(t *testing.T) {
	var e *env
	e = newEnv(t, echo, func(base string) []Provider {
		return []Provider{{Name: "shared", BaseURL: base, Secret: "UP_KEY", Header: "X-Api-Key", Format: "{key}"}}
	})
	owner, _ := tenancy.From(e.tenant)
	e.gw.providers["shared"].SecretTenant = owner.TenantID
	b := e.newTenant("b")
	if _, err := e.sec.Create(b, secrets.Spec{Name: "UP_KEY"}, secrets.NewValue([]byte("b's own"))); err != nil {
		t.Fatal(err)
	}
	sb := e.newSandbox(b)
	resp, body := send(t, e.channel(sb), "GET", "/provider/v1/shared/v", "", map[string]string{"X-Api-Key": e.gw.Env(sb)[api.EnvProviderToken]})
	if resp.StatusCode != 200 {
		t.Fatalf("shared key: %d %s", resp.StatusCode, body)
	}
	if r, _ := e.upstream.last(t); r.Header.Get("X-Api-Key") != theKey || r.Header.Get("Authorization") != "" {
		t.Errorf("upstream headers %v", r.Header)
	}
	if len(e.events(b, sb, 1)) != 1 || len(e.events(e.tenant, sb, 0)) != 0 {
		t.Error("the call is not audited in the calling sandbox's tenant only")
	}
}

// TestQueryKey: a key that goes in the query replaces the caller's.
func TestQueryKey(t *testing.T) {
	e := newEnv(t, echo, func(base string) []Provider {
		return []Provider{{Name: "q", BaseURL: base, Secret: "UP_KEY", Query: "key"}}
	})
	tok := e.gw.Env(e.sandbox)[api.EnvProviderToken]
	resp, body := send(t, e.channel(e.sandbox), "GET", "/provider/v1/q/search?key=mine&q=go", "", map[string]string{"X-Goog-Api-Key": tok})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	r, _ := e.upstream.last(t)
	if q := r.URL.Query(); q.Get("key") != theKey || len(q["key"]) != 1 || q.Get("q") != "go" || r.Header.Get("Authorization") != "" || r.Header.Get("X-Goog-Api-Key") != "" {
		t.Errorf("upstream saw %s %v", r.URL.RawQuery, r.Header)
	}
}

// TestUpstreamDown: an upstream that does not answer is a 503 whose
// message and log hold no key, even one in the query.
func TestUpstreamDown(t *testing.T) {
	e := newEnv(t, echo, func(string) []Provider {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return []Provider{{Name: "down", BaseURL: "http://" + addr + "/v1", Secret: "UP_KEY", Query: "key"}}
	})
	resp, body := send(t, e.channel(e.sandbox), "GET", "/provider/v1/down/x", "", bearer(e.gw.Env(e.sandbox)[api.EnvProviderToken]))
	wantRefused(t, "upstream down", resp, body, 503, "provider_unreachable")
	if strings.Contains(e.logs.String(), theKey) || strings.Contains(body, theKey) {
		t.Error("the key leaked with an upstream's failure")
	}
	if evs := e.events(e.tenant, e.sandbox, 1); len(evs) != 1 || evs[0].Data["status"] != float64(503) {
		t.Errorf("events %+v", evs)
	}
}

// TestRateLimit: calls past a provider's rate, or past its calls in
// flight, are refused with 429 and Retry-After, per sandbox.
func TestRateLimit(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/slow" {
			<-release
		}
		echo(w, r)
	}, func(base string) []Provider {
		return []Provider{{Name: "up", BaseURL: base, Secret: "UP_KEY", RequestsPerMinute: 1, Burst: 2},
			{Name: "one", BaseURL: base, Secret: "UP_KEY", MaxConcurrent: 1}}
	})
	tok := bearer(e.gw.Env(e.sandbox)[api.EnvProviderToken])
	ch := e.channel(e.sandbox)
	for i := range 2 {
		if resp, body := send(t, ch, "GET", "/provider/v1/up/x", "", tok); resp.StatusCode != 200 {
			t.Fatalf("call %d within the burst: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := send(t, ch, "GET", "/provider/v1/up/x", "", tok)
	wantRefused(t, "past the rate", resp, body, 429, "rate_limited")
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	// Another sandbox has its own bucket.
	other := e.newSandbox(e.tenant)
	if resp, body := send(t, e.channel(other), "GET", "/provider/v1/up/x", "", bearer(e.gw.Env(other)[api.EnvProviderToken])); resp.StatusCode != 200 {
		t.Errorf("another sandbox: %d %s", resp.StatusCode, body)
	}

	done := make(chan int)
	go func() {
		resp, _ := send(t, ch, "GET", "/provider/v1/one/slow", "", tok)
		done <- resp.StatusCode
	}()
	for e.upstream.count() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	resp, body = send(t, ch, "GET", "/provider/v1/one/x", "", tok)
	wantRefused(t, "past the calls in flight", resp, body, 429, "too_many_in_flight")
	close(release)
	if s := <-done; s != 200 {
		t.Errorf("the slow call: %d", s)
	}
	if resp, body := send(t, ch, "GET", "/provider/v1/one/x", "", tok); resp.StatusCode != 200 {
		t.Errorf("after the slow call ended: %d %s", resp.StatusCode, body)
	}
}

// TestStreams: server-sent events reach the caller as the upstream writes
// them, and a WebSocket upgrade goes through.
func TestStreams(t *testing.T) {
	next := make(chan struct{})
	e := newEnv(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				io.WriteString(w, "data: token"+string(rune('0'+i))+"\n\n")
				w.(http.Flusher).Flush()
				<-next
			}
		case "/api/v2/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			typ, b, err := c.Read(r.Context())
			if err == nil {
				c.Write(r.Context(), typ, append([]byte("echo "), b...))
			}
			c.Close(websocket.StatusNormalClosure, "")
		}
	}, oneProvider)
	tok := e.gw.Env(e.sandbox)[api.EnvProviderToken]
	ch := e.channel(e.sandbox)

	req, _ := http.NewRequest("POST", ch.URL+"/provider/v1/up/sse", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := ch.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		// Each event arrives while the upstream waits to write the next.
		line, err := br.ReadString('\n')
		if err != nil || line != "data: token"+string(rune('0'+i))+"\n" {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(ch.URL, "http") + "/provider/v1/up/ws"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatalf("websocket through the gateway: %v", err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != "echo hi" {
		t.Fatalf("websocket echo: %q %v", b, err)
	}
	if r, _ := e.upstream.last(t); r.Header.Get("Authorization") != "Bearer "+theKey {
		t.Errorf("the upgrade carried %q", r.Header.Get("Authorization"))
	}
}

// TestNoProviders: with none configured, every call is a clear 404 and
// a short key is refused.
func TestNoProviders(t *testing.T) {
	e := newEnv(t, echo, func(string) []Provider { return nil })
	resp, body := send(t, e.channel(e.sandbox), "GET", "/provider/v1/openai/models", "", bearer(e.gw.Env(e.sandbox)[api.EnvProviderToken]))
	wantRefused(t, "no providers", resp, body, 404, "provider_not_found")
	if _, err := New(Config{Key: make([]byte, 8)}); err == nil {
		t.Error("a short key was taken")
	}
}
