package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// providerKey is the upstream key the gateway tests look for everywhere it
// must not be.
const providerKey = "sk-e2e-PROVIDER-KEY-CANARY-51c9"

// llmStandIn is a provider on the host's loopback: it keeps the headers it
// saw, answers /v1/chat with JSON, and /v1/stream with server-sent events,
// one per value sent on next.
type llmStandIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
	next chan struct{}
}

func startLLM(t *testing.T) *llmStandIn {
	l := &llmStandIn{next: make(chan struct{})}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Clone())
		l.mu.Unlock()
		switch r.URL.Path {
		case "/v1/chat":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"echo":%q}`, b)
		case "/v1/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 2 {
				fmt.Fprintf(w, "data: part%d\n\n", i)
				w.(http.Flusher).Flush()
				select {
				case <-l.next:
				case <-r.Context().Done():
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *llmStandIn) last(t *testing.T) http.Header {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) == 0 {
		t.Fatal("the provider saw no call")
	}
	return l.seen[len(l.seen)-1]
}

// startGatewayServer runs hutch serve on driver over dir (a new one when
// empty) with one provider, llm, whose key is in the admin tenant's
// secret LLM_KEY.
func startGatewayServer(t *testing.T, driver string, llm *llmStandIn, dir string) (*server, *fullLog) {
	t.Helper()
	fresh := dir == ""
	if fresh {
		dir = filepath.Dir(testutil.DataDir(t))
	}
	file := filepath.Join(dir, "providers.yaml")
	doc := fmt.Sprintf("providers:\n  - name: llm\n    base_url: %s/v1\n    secret: LLM_KEY\n", llm.URL)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, logs := startLoggedServer(t, filepath.Join(dir, "data"), nil, "--driver", driver, "--providers", file)
	if fresh {
		if _, err := s.client().CreateSecret(context.Background(), api.CreateSecretRequest{Name: "LLM_KEY", Value: providerKey}); err != nil {
			t.Fatal(err)
		}
	}
	return s, logs
}

// sh runs a shell command in a sandbox and returns its stdout, failing the
// test unless it exits 0.
func sh(t *testing.T, c *client.Client, id, script string) string {
	t.Helper()
	res, err := c.Exec(context.Background(), id, api.ExecRequest{Cmd: []string{"sh", "-c", script}, TimeoutMS: 60_000})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: %+v, %v", script, res, err)
	}
	return res.Stdout
}

// TestProviderGateway: code in a sandbox whose egress is none calls a
// provider through the gateway with its own token; the provider sees the
// real key and none of the sandbox's credentials; streamed answers
// arrive as they are written; and the key is nowhere in the sandbox (the
// environment of every process, /proc/*/cmdline, its files), the server's
// log or any API answer.
func TestProviderGateway(t *testing.T) {
	llm := startLLM(t)
	s, logs := startGatewayServer(t, "namespace", llm, "")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Root: true, Network: &api.NetworkPolicy{Egress: api.EgressNone}})
	if err != nil {
		t.Fatal(err)
	}

	got := sh(t, c, sb.ID, `curl -sS -X POST -H "Authorization: Bearer $HUTCH_PROVIDER_TOKEN" -H "Cookie: a=b" -d '{"q":1}' "$HUTCH_PROVIDER_URL/llm/chat"`)
	if got != `{"echo":"{\"q\":1}"}` {
		t.Fatalf("the call through the gateway answered %q", got)
	}
	h := llm.last(t)
	if h.Get("Authorization") != "Bearer "+providerKey || h.Get("Cookie") != "" || h.Get("X-Forwarded-For") != "" {
		t.Errorf("the provider saw %v", h)
	}
	for k, vs := range h {
		if strings.Contains(strings.Join(vs, " "), "hutch_sbx_") {
			t.Errorf("the provider saw the sandbox's token in %s", k)
		}
	}
	// Egress is none, and the gateway is still the only way to the
	// provider: the same server straight through the proxy is refused.
	if code := sh(t, c, sb.ID, `curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x http://127.0.0.1:3128 `+llm.URL+`/v1/chat || true`); code != "403" {
		t.Errorf("the provider through the egress proxy under none: %s", code)
	}
	// Without the token, or with another sandbox's, the gateway refuses.
	if code := sh(t, c, sb.ID, `curl -s -o /dev/null -w '%{http_code}' "$HUTCH_PROVIDER_URL/llm/chat"`); code != "401" {
		t.Errorf("no token: %s", code)
	}

	// A streamed answer: the first event is in the sandbox while the
	// provider waits to send the second.
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", `curl -sSN -H "x-api-key: $HUTCH_PROVIDER_TOKEN" "$HUTCH_PROVIDER_URL/llm/stream"`}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.ProcessOutput(ctx, sb.ID, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for !strings.Contains(out.String(), "data: part0") {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream before the first event: %v (%q)", err, out.String())
		}
		out.Write(ev.Data)
	}
	st.Close()
	llm.next <- struct{}{}
	llm.next <- struct{}{}
	if exit, err := c.WaitProcess(ctx, sb.ID, p.PID, 30*time.Second); err != nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Fatalf("the streaming call: %+v, %v", exit, err)
	}

	// Nowhere in the sandbox: every process's environment and command
	// line (a background process running meanwhile), and every file but
	// the host's read-only /usr. The key reaches the searching shell on
	// its stdin, so it is in no command line or file of its own.
	bg, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	if env := sh(t, c, sb.ID, `echo "$HUTCH_PROVIDER_URL $HUTCH_PROVIDER_TOKEN"`); !strings.HasPrefix(env, "http://127.0.0.1:3128/provider/v1 hutch_sbx_"+sb.ID+".") {
		t.Errorf("the sandbox's gateway environment: %q", env)
	}
	search := func(script string) string {
		t.Helper()
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "read -r k; " + script}, Stdin: providerKey + "\n", TimeoutMS: 120_000})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v, %v", script, res, err)
		}
		return res.Stdout
	}
	found := search(`n=0; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
		v=$(tr '\0' '\n' < $f 2>/dev/null) || continue; n=$((n+1))
		case "$v" in *"$k"*) echo "key in $f";; esac
		case "$v" in *HUTCH_PROVIDER_TOKEN=hutch_sbx_*) echo "token in $f";; esac
	done; echo "read $n"`)
	if strings.Contains(found, "key in") || !strings.Contains(found, "token in") {
		t.Errorf("the processes' environments and command lines: %s", found)
	}
	if files := search(`grep -rlIF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr -e "$k" / 2>/dev/null || true`); files != "" {
		t.Errorf("the key is in the sandbox's files: %s", files)
	}
	if _, err := c.SignalProcess(ctx, sb.ID, bg.PID, "KILL", false); err != nil {
		t.Fatal(err)
	}
	// Nor in any file of the server's data directory (the secret is
	// sealed in the store).
	filepath.WalkDir(s.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), providerKey) {
			t.Errorf("the key is in %s", p)
		}
		return nil
	})

	// Audited (the two calls past the token check), without the key, and
	// no answer or log line holds it.
	var answers []string
	for _, path := range []string{"/v1/sandboxes/" + sb.ID, "/v1/sandboxes", "/v1/events", "/v1/sandboxes/" + sb.ID + "/events?type=provider.call",
		"/v1/sandboxes/" + sb.ID + "/network", "/v1/secrets", "/v1/secrets/LLM_KEY"} {
		status, b := rawDo(t, s, "", "GET", path, "")
		if status != 200 {
			t.Errorf("GET %s: %d %s", path, status, b)
		}
		answers = append(answers, b)
	}
	var evs api.EventList
	if err := json.Unmarshal([]byte(answers[3]), &evs); err != nil || len(evs.Events) != 2 {
		t.Fatalf("provider.call events: %s", answers[3])
	}
	first := evs.Events[0]
	if first.Data["provider"] != "llm" || first.Data["status"] != float64(200) || first.Data["path"] != "/chat" || first.Data["bytes_in"] == float64(0) {
		t.Errorf("the first call's audit: %+v", first)
	}
	for i, a := range answers {
		if strings.Contains(a, providerKey) {
			t.Errorf("the key is in the answer to GET #%d", i)
		}
	}
	if strings.Contains(logs.String(), providerKey) {
		t.Error("the key is in the server's log")
	}
	if !strings.Contains(logs.String(), `"msg":"provider call"`) {
		t.Error("no audit line in the server's log")
	}
}

// TestProviderGatewayProcessDriver: a process-driver sandbox's egress
// proxy is a loopback port of its own, the only TCP port Landlock lets it
// connect to; the gateway is there too, and still after a stop and start
// of the sandbox and a restart of the server.
func TestProviderGatewayProcessDriver(t *testing.T) {
	llm := startLLM(t)
	dir := filepath.Dir(testutil.DataDir(t))
	s, _ := startGatewayServer(t, "process", llm, dir)
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: "LLM_KEY", Value: providerKey}); err != nil {
		t.Fatal(err)
	}
	env := strings.Fields(sh(t, c, sb.ID, `echo "$HTTP_PROXY $HUTCH_PROVIDER_URL"`))
	if len(env) != 2 || !strings.HasPrefix(env[0], "http://127.0.0.1:") || env[1] != env[0]+"/provider/v1" {
		t.Fatalf("proxy and gateway environment: %q", env)
	}
	gatewayCall := func(what string, c *client.Client) {
		t.Helper()
		got := sh(t, c, sb.ID, `curl -sS -H "Authorization: Bearer $HUTCH_PROVIDER_TOKEN" -d hi "$HUTCH_PROVIDER_URL/llm/chat"`)
		if got != `{"echo":"hi"}` || llm.last(t).Get("Authorization") != "Bearer "+providerKey {
			t.Fatalf("the call %s: %q, provider saw %v", what, got, llm.last(t))
		}
	}
	gatewayCall("after create", c)
	// The provider straight, not through the proxy: Landlock refuses the
	// connection (where the kernel has Landlock's network rules).
	if code := sh(t, c, sb.ID, `curl -s -o /dev/null -w '%{http_code}' --noproxy '*' `+llm.URL+`/v1/chat || true`); code != "000" {
		t.Errorf("the provider reached directly: %s", code)
	}
	// Through the proxy under the default policy: loopback is refused.
	if code := sh(t, c, sb.ID, `curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x "$HTTP_PROXY" `+llm.URL+`/v1/chat || true`); code != "403" {
		t.Errorf("host loopback through the proxy under public: %s", code)
	}

	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	gatewayCall("after a stop and start", c)
	s.stop(false)
	s2, _ := startGatewayServer(t, "process", llm, dir)
	gatewayCall("after a restart of the server", s2.client())
}
