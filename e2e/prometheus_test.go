package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestPrometheus: GET /metrics on the API serves the server's metrics to
// admin keys only, counting what was done through the API: the sandbox
// running, its create, its command and the exec route; --metrics-listen
// serves the same with no key on a listener of its own, and nothing else.
func TestPrometheus(t *testing.T) {
	s, log := launch(t, nil, "", nil, "--driver", "namespace", "--metrics-listen", "127.0.0.1:0")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}

	resp := s.do("GET", "/metrics", "", nil)
	fams := metricsOf(t, resp)
	wantMetrics(t, "the API's /metrics", fams)
	for _, h := range []struct {
		name   string
		labels map[string]string
	}{
		{"hutch_sandbox_create_seconds", map[string]string{"driver": "namespace", "result": "ok"}},
		{"hutch_exec_seconds", map[string]string{"driver": "namespace", "result": "ok"}},
		{"hutch_http_request_duration_seconds", map[string]string{"route": "/v1/sandboxes/{id}/exec", "method": "POST", "code": "200"}},
	} {
		if n := testutil.Series(fams, h.name, h.labels).GetHistogram().GetSampleCount(); n < 1 {
			t.Errorf("%s%v counts %d; want the call made", h.name, h.labels, n)
		}
	}
	if n := testutil.Series(fams, "hutch_agent_calls_total", map[string]string{"op": "exec", "result": "ok"}).GetCounter().GetValue(); n < 1 {
		t.Errorf("hutch_agent_calls_total{op=exec,result=ok} = %v; want the exec counted", n)
	}
	for _, m := range fams["hutch_http_request_duration_seconds"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), sb.ID) {
				t.Errorf("a request label holds the sandbox's id: %v", m.GetLabel())
			}
		}
	}

	resp = s.do("GET", "/metrics", "-", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a key: %d; want 401", resp.StatusCode)
	}
	member, err := c.CreateKey(ctx, api.CreateKeyRequest{Name: "member"})
	if err != nil || member.Role != api.RoleMember {
		t.Fatalf("member key = %+v, %v", member, err)
	}
	resp = s.do("GET", "/metrics", member.Secret, nil)
	var e api.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusForbidden || e.Error.Code != "admin_required" {
		t.Errorf("/metrics with a member key: %d %+v (%v); want 403 admin_required", resp.StatusCode, e, err)
	}
	resp.Body.Close()

	addr := metricsAddr(t, log)
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics(t, "--metrics-listen", metricsOf(t, resp))
	for _, path := range []string{"/", "/v1/info"} {
		resp, err = http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on --metrics-listen: %d; want 404", path, resp.StatusCode)
		}
	}
}

// wantMetrics fails t unless fams count the one running sandbox and hold
// the Go runtime's metrics.
func wantMetrics(t *testing.T, where string, fams map[string]*dto.MetricFamily) {
	t.Helper()
	if n := testutil.Series(fams, "hutch_sandboxes", map[string]string{"driver": "namespace", "state": "running"}).GetGauge().GetValue(); n != 1 {
		t.Errorf("%s: hutch_sandboxes{driver=namespace,state=running} = %v; want 1", where, n)
	}
	if fams["go_goroutines"] == nil {
		t.Errorf("%s: no go_goroutines", where)
	}
}

// metricsOf parses a 200 answer in the Prometheus text format.
func metricsOf(t *testing.T, resp *http.Response) map[string]*dto.MetricFamily {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s; want 200 in the text format", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return testutil.ParseMetrics(t, resp.Body)
}

// metricsAddr is the address --metrics-listen bound, from the log line
// that announces it (written before the server says it serves).
func metricsAddr(t *testing.T, log *fullLog) string {
	t.Helper()
	for _, line := range strings.Split(log.String(), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "metrics serving without a key" {
			return rec.Addr
		}
	}
	t.Fatalf("no metrics address in the log:\n%s", log)
	return ""
}
