package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/egress"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// counter is a SandboxCounter with fixed answers.
type counter struct {
	counts []sandbox.Count
	err    error
}

func (c counter) CountSandboxes(ctx context.Context) ([]sandbox.Count, error) {
	if !tenancy.IsSystem(ctx) {
		return nil, store.SystemOnly()
	}
	return c.counts, c.err
}

func newMetrics(t *testing.T, c counter) *Metrics {
	t.Helper()
	m, err := New(Config{Sandboxes: c})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scrape gets the metrics as a scraper does, through the handler, and
// parses the text it answers.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return testutil.ParseMetrics(t, rec.Body)
}

// labelSets lists the label sets of family name's series.
func labelSets(fams map[string]*dto.MetricFamily, name string) []map[string]string {
	var out []map[string]string
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		out = append(out, got)
	}
	return out
}

func TestSandboxes(t *testing.T) {
	m := newMetrics(t, counter{counts: []sandbox.Count{
		{State: api.StateRunning, Driver: "namespace", N: 2},
		{State: api.StateDestroyed, Driver: "process", N: 5},
	}})
	fams := scrape(t, m)
	for _, want := range []struct {
		state, driver string
		n             float64
	}{{"running", "namespace", 2}, {"destroyed", "process", 5}} {
		s := testutil.Series(fams, "hutch_sandboxes", map[string]string{"state": want.state, "driver": want.driver})
		if s.GetGauge().GetValue() != want.n {
			t.Errorf("hutch_sandboxes{state=%q,driver=%q} = %v; want %v", want.state, want.driver, s, want.n)
		}
	}
	if n := len(fams["hutch_sandboxes"].GetMetric()); n != 2 {
		t.Errorf("hutch_sandboxes has %d series; want the store's 2", n)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
}

// TestSandboxesFail: a store that cannot count leaves the rest of the
// scrape whole, and says so.
func TestSandboxesFail(t *testing.T) {
	m := newMetrics(t, counter{err: errors.New("database is locked")})
	fams := scrape(t, m)
	if fams["hutch_sandboxes"] != nil {
		t.Errorf("hutch_sandboxes served from a failed count: %v", fams["hutch_sandboxes"])
	}
	if fams["go_goroutines"] == nil {
		t.Error("a failed count took the Go metrics with it")
	}
	// A scrape's error is counted once it is gathered: the next shows it.
	fams = scrape(t, m)
	if s := testutil.Series(fams, "promhttp_metric_handler_errors_total", map[string]string{"cause": "gathering"}); s.GetCounter().GetValue() != 1 {
		t.Errorf("promhttp_metric_handler_errors_total{cause=gathering} after a failed scrape = %v; want 1", s)
	}
}

func TestObservers(t *testing.T) {
	m := newMetrics(t, counter{})
	m.ObserveCreate("namespace", 1500*time.Millisecond, nil)
	m.ObserveCreate("namespace", time.Second, nil)
	m.ObserveCreate("process", time.Second, fmt.Errorf("start agent: %w", errdefs.Unavailable("agent_lost", "lost")))
	m.ObserveExec("namespace", 10*time.Millisecond, nil)
	m.ObserveExec("namespace", time.Minute, context.Canceled)
	m.ObserveCall("exec", nil)
	m.ObserveCall("exec", nil)
	m.ObserveCall("files.read", errdefs.Unavailable("agent_unreachable", "no answer"))
	m.ObserveCall("files.stat", errdefs.NotFound("file_not_found", "no such file"))
	m.ObserveCall("files.list", errors.New("unclassified"))
	m.ObserveEgress(egress.VerdictAllowed, 100, 2000)
	m.ObserveEgress(egress.VerdictAllowed, 1, 0)
	m.ObserveEgress(egress.VerdictDenied, 0, 0)
	m.ObserveEgress(egress.VerdictFailed, 0, 0)
	m.ObserveGatewayCall("openai", 200)
	m.ObserveGatewayCall("openai", 429)
	m.ObserveGatewayCall("", 401)
	fams := scrape(t, m)

	histograms := []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"hutch_sandbox_create_seconds", map[string]string{"driver": "namespace", "result": "ok"}, 2, 2.5},
		{"hutch_sandbox_create_seconds", map[string]string{"driver": "process", "result": "unavailable"}, 1, 1},
		{"hutch_exec_seconds", map[string]string{"driver": "namespace", "result": "ok"}, 1, 0.01},
		{"hutch_exec_seconds", map[string]string{"driver": "namespace", "result": "canceled"}, 1, 60},
	}
	for _, h := range histograms {
		s := testutil.Series(fams, h.name, h.labels)
		if s.GetHistogram().GetSampleCount() != h.count || s.GetHistogram().GetSampleSum() != h.sum {
			t.Errorf("%s%v = %v; want count %d, sum %v", h.name, h.labels, s, h.count, h.sum)
		}
	}
	counters := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"hutch_agent_calls_total", map[string]string{"op": "exec", "result": "ok"}, 2},
		{"hutch_agent_calls_total", map[string]string{"op": "files.read", "result": "unavailable"}, 1},
		{"hutch_agent_calls_total", map[string]string{"op": "files.stat", "result": "not_found"}, 1},
		{"hutch_agent_calls_total", map[string]string{"op": "files.list", "result": "internal"}, 1},
		{"hutch_egress_connections_total", map[string]string{"decision": "allowed"}, 2},
		{"hutch_egress_connections_total", map[string]string{"decision": "denied"}, 1},
		{"hutch_egress_connections_total", map[string]string{"decision": "failed"}, 1},
		{"hutch_egress_bytes_total", map[string]string{"direction": "out"}, 101},
		{"hutch_egress_bytes_total", map[string]string{"direction": "in"}, 2000},
		{"hutch_gateway_requests_total", map[string]string{"provider": "openai", "code": "200"}, 1},
		{"hutch_gateway_requests_total", map[string]string{"provider": "openai", "code": "429"}, 1},
		{"hutch_gateway_requests_total", map[string]string{"provider": "", "code": "401"}, 1},
	}
	for _, c := range counters {
		if s := testutil.Series(fams, c.name, c.labels); s.GetCounter().GetValue() != c.value {
			t.Errorf("%s%v = %v; want %v", c.name, c.labels, s, c.value)
		}
	}
	for name, want := range map[string]int{"hutch_agent_calls_total": 4, "hutch_egress_connections_total": 3,
		"hutch_egress_bytes_total": 2, "hutch_gateway_requests_total": 3} {
		if got := labelSets(fams, name); len(got) != want {
			t.Errorf("%s has series %v; want %d", name, got, want)
		}
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), "canceled"},
		{errdefs.Conflict("sandbox_not_running", "stopped"), "conflict"},
		{fmt.Errorf("admit: %w", errdefs.ErrRateLimited), "rate_limited"},
		{errdefs.New(errdefs.ErrInsufficientStorage, "disk_full", "full"), "insufficient_storage"},
		{errors.New("boom"), "internal"},
	} {
		if got := result(tc.err); got != tc.want {
			t.Errorf("result(%v) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

// TestRoute: requests are labelled by their route's pattern, never their
// path; a long route is observed at its status line, once; whatever no
// route takes is "unmatched", its method bounded.
func TestRoute(t *testing.T) {
	m := newMetrics(t, counter{})
	written, finish := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("POST /v1/sandboxes/{id}/stop", m.Route("POST", "/v1/sandboxes/{id}/stop", false,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusConflict) })))
	mux.Handle("GET /v1/sandboxes/{id}", m.Route("GET", "/v1/sandboxes/{id}", false,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	mux.Handle("GET /v1/events", m.Route("GET", "/v1/events", true,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush through the recorder: %v", err)
			}
			close(written)
			<-finish
			fmt.Fprintln(w, "data: bye")
		})))
	mux.Handle("/", m.Unmatched(http.NotFoundHandler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	do := func(method, path string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do("POST", "/v1/sandboxes/01abc/stop")
	do("POST", "/v1/sandboxes/01def/stop")
	do("GET", "/v1/sandboxes/01abc")
	do("BREW", "/coffee")
	do("DELETE", "/nowhere")

	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		do("GET", "/v1/events")
	}()
	<-written
	// The stream is open: it was observed when its status was written.
	want := map[string]uint64{
		`POST /v1/sandboxes/{id}/stop 409`: 2,
		`GET /v1/sandboxes/{id} 200`:       1,
		`other unmatched 404`:              1,
		`DELETE unmatched 404`:             1,
		`GET /v1/events 200`:               1,
	}
	requests := func() map[string]uint64 {
		got := map[string]uint64{}
		for _, s := range scrape(t, m)["hutch_http_request_duration_seconds"].GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["method"]+" "+l["route"]+" "+l["code"]] = s.GetHistogram().GetSampleCount()
		}
		return got
	}
	if diff := cmp.Diff(want, requests()); diff != "" {
		t.Errorf("requests while the stream is open (-want +got):\n%s", diff)
	}
	close(finish)
	<-streamed
	if diff := cmp.Diff(want, requests()); diff != "" {
		t.Errorf("requests once the stream ended (-want +got):\n%s", diff)
	}

	var none *Metrics
	if got := none.Route("GET", "/", false, mux); got != http.Handler(mux) {
		t.Errorf("a nil Metrics wrapped the handler")
	}
}
