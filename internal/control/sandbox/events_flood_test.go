package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/edge/egress"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
)

// egressDriver is the fake driver with an egress listener per sandbox,
// which the fake lacks: a Unix socket the test dials as a sandbox's
// forwarder would, served by the real egress proxy.
type egressDriver struct {
	*fake.Driver
	dir string

	mu    sync.Mutex
	socks []string
}

func (d *egressDriver) ListenEgress(ctx context.Context, h driver.Handle) (net.Listener, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := filepath.Join(d.dir, "e"+strconv.Itoa(len(d.socks)))
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	d.socks = append(d.socks, p)
	return ln, nil
}

// last is the socket of the egress proxy started last.
func (d *egressDriver) last(t *testing.T) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.socks) == 0 {
		t.Fatal("no egress proxy was started")
	}
	return d.socks[len(d.socks)-1]
}

// newEgressFixture is the live fixture whose sandboxes have an egress
// proxy; the operator lets allowlists name the host's loopback.
func newEgressFixture(t *testing.T, mutate func(*Config)) (*liveFixture, *egressDriver) {
	t.Helper()
	var eg *egressDriver
	f := newLiveFixture(t, func(c *Config) {
		eg = &egressDriver{Driver: c.Drivers.Default().(*fake.Driver), dir: t.TempDir()}
		c.Drivers = driver.Single(eg)
		c.Egress = &egress.Proxies{Config: &egress.Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
		if mutate != nil {
			mutate(c)
		}
	})
	return f, eg
}

// connect sends one CONNECT on a new connection to the proxy at sock and
// returns the status.
func connect(sock, dest string) (int, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// allEvents returns every event of a sandbox of the given types, paging.
func allEvents(t *testing.T, st store.Store, ctx context.Context, id string, types ...string) []store.Event {
	t.Helper()
	var out []store.Event
	q := store.EventQuery{SandboxID: id, Types: types, Limit: store.MaxLimit}
	for {
		evs, next, err := st.ListEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		if next == "" {
			return out
		}
		q.After = next
	}
}

// num reads a number of an event's data (JSON numbers come back float64).
func num(e store.Event, key string) int64 {
	v, _ := e.Data[key].(float64)
	return int64(v)
}

// TestEgressFloodIsBounded is the attack: a sandbox whose proxy sees
// thousands of connections in a moment, denied under none and then
// allowed under an allowlist, must leave a few rows per destination in
// its tenant's event log, not one per decision, and the rows must still
// add up to every decision and every byte.
func TestEgressFloodIsBounded(t *testing.T) {
	f, eg := newEgressFixture(t, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Network: &api.NetworkPolicy{Egress: api.EgressNone}})
	if err != nil {
		t.Fatal(err)
	}
	sock := eg.last(t)

	// Denied: 3,000 connections from 16 workers to three destinations.
	dests := []string{"example.com:443", "10.0.0.1:22", "169.254.169.254:80"}
	const conns, workers = 3000, 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < conns; i += workers {
				code, err := connect(sock, dests[i%len(dests)])
				if err == nil && code != http.StatusForbidden {
					err = fmt.Errorf("CONNECT %s under none: %d, want 403", dests[i%len(dests)], code)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Allowed: plain HTTP through the proxy to a server on the host's
	// loopback, which the allowlist names.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	if _, err := f.svc.SetNetwork(f.ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	const gets = 300
	for range gets {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET through the proxy: %d", resp.StatusCode)
		}
	}
	// An allowed request is reported once its response is written.
	var n api.Network
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, err = f.svc.Network(f.ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		if n.Allowed == gets || time.Now().After(deadline) {
			break
		}
	}
	if n.Denied != conns || n.Allowed != gets {
		t.Fatalf("counters: %d denied, %d allowed; want %d and %d", n.Denied, n.Allowed, conns, gets)
	}

	// Stopping the sandbox writes what is still being counted.
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	evs := allEvents(t, f.st, f.ctx, sb.ID, api.EventEgressDenied, api.EventEgressAllowed)
	t.Logf("%d egress events for %d decisions", len(evs), conns+gets)
	// At most one at once and one summary per destination and verdict.
	if max := 2 * (len(dests) + 1); len(evs) > max {
		t.Errorf("%d egress events for %d decisions; want at most %d", len(evs), conns+gets, max)
	}
	counts := map[string]int64{}
	var out, in int64
	for _, e := range evs {
		host, _ := e.Data["host"].(string)
		counts[e.Type+" "+net.JoinHostPort(host, strconv.FormatInt(num(e, "port"), 10))] += num(e, "count")
		out += num(e, "bytes_out")
		in += num(e, "bytes_in")
	}
	want := map[string]int64{api.EventEgressAllowed + " " + u.Host: gets}
	for _, d := range dests {
		want[api.EventEgressDenied+" "+d] = conns / int64(len(dests))
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("events count %d of %s; want %d", counts[k], k, v)
		}
	}
	if out != n.BytesOut || in != n.BytesIn || in == 0 {
		t.Errorf("events carry %d bytes out and %d in; the counters say %d and %d", out, in, n.BytesOut, n.BytesIn)
	}
}

// TestEgressWindows: the first decision about a destination is recorded
// at once; the rest of its window come as one event when it ends; a busy
// destination stays counted, a quiet one is recorded at once again; past
// egressDests destinations the rest are counted together.
func TestEgressWindows(t *testing.T) {
	const window = 300 * time.Millisecond
	f, eg := newEgressFixture(t, func(c *Config) { c.EgressEventWindow = window })
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Network: &api.NetworkPolicy{Egress: api.EgressNone}})
	if err != nil {
		t.Fatal(err)
	}
	sock := eg.last(t)
	denied := func(dest string, n int) {
		t.Helper()
		for range n {
			if code, err := connect(sock, dest); err != nil || code != http.StatusForbidden {
				t.Fatalf("CONNECT %s: %d, %v", dest, code, err)
			}
		}
	}
	counts := func() (rows int, sum int64) {
		evs := allEvents(t, f.st, f.ctx, sb.ID, api.EventEgressDenied)
		for _, e := range evs {
			sum += num(e, "count")
		}
		return len(evs), sum
	}
	waitFor := func(what string, rows int, sum int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * window); ; time.Sleep(window / 10) {
			r, s := counts()
			if r == rows && s == sum {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows counting %d; want %d counting %d", what, r, s, rows, sum)
			}
		}
	}

	start := time.Now()
	denied("example.com:443", 50)
	if r, s := counts(); time.Since(start) < window && (r != 1 || s != 1) {
		t.Fatalf("within the first window: %d rows counting %d; want the first decision alone", r, s)
	}
	waitFor("after the first window", 2, 50)
	evs := allEvents(t, f.st, f.ctx, sb.ID, api.EventEgressDenied)
	if last := evs[len(evs)-1]; last.Data["first_at"] == nil || last.Data["last_at"] == nil || last.Data["window_s"] != window.Seconds() {
		t.Errorf("summary data %v; want first_at, last_at and window_s %g", last.Data, window.Seconds())
	}
	// Still busy: counted, not recorded at once.
	denied("example.com:443", 5)
	if r, _ := counts(); r != 2 {
		t.Fatalf("a busy destination's next decisions made %d rows at once; want none", r-2)
	}
	waitFor("after a busy window", 3, 55)
	// Quiet for a window: forgotten, so recorded at once again.
	time.Sleep(2 * window)
	denied("example.com:443", 1)
	if r, s := counts(); r != 4 || s != 56 {
		t.Fatalf("after a quiet window: %d rows counting %d; want one more at once", r, s)
	}

	// More destinations than are named.
	time.Sleep(2 * window)
	before, _ := counts()
	for i := range 2 * egressDests {
		denied(fmt.Sprintf("h%d.example:443", i), 3)
	}
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	rows, sum := counts()
	if sum != 56+6*egressDests {
		t.Fatalf("the events count %d decisions; want %d", sum, 56+6*egressDests)
	}
	if rows-before > 2*egressDests+2 {
		t.Errorf("%d destinations made %d rows; want at most %d", 2*egressDests, rows-before, 2*egressDests+2)
	}
	var other bool
	for _, e := range allEvents(t, f.st, f.ctx, sb.ID, api.EventEgressDenied) {
		other = other || e.Data["other"] == true
	}
	if !other {
		t.Error("no event counts the destinations beyond those named")
	}
}

// TestLifecycleSurvivesFlood: a sandbox that causes events faster than
// its budget loses the excess, counted in one events.dropped, and never
// its lifecycle events.
func TestLifecycleSurvivesFlood(t *testing.T) {
	budget := events.Budget{Rate: 10, Burst: 20, Quiet: time.Hour, ReportEvery: time.Hour}
	f := newLiveFixture(t, func(c *Config) { c.Events = events.New(c.Store, events.Config{Budget: budget}) })
	sb := f.create(t)
	rec, err := f.st.GetSandbox(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	const flood = 2000
	start := time.Now()
	var wg sync.WaitGroup
	spam := func(from int) {
		for w := range 4 {
			wg.Go(func() {
				for i := from + w; i < from+flood/2; i += 4 {
					f.svc.emit(f.ctx, rec, api.EventProcessStarted, "process started", map[string]any{"pid": i})
				}
			})
		}
	}
	// The budget is spent before the sandbox stops and starts, and
	// spent again while it does.
	spam(0)
	wg.Wait()
	spam(flood / 2)
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Start(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Destroying it records what was dropped.
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	evs := allEvents(t, f.st, f.ctx, sb.ID)
	var life []string
	var kept, dropped int64
	for _, e := range evs {
		switch e.Type {
		case api.EventProcessStarted:
			kept++
		case api.EventEventsDropped:
			dropped += num(e, "dropped")
			if types, _ := e.Data["types"].(map[string]any); types[api.EventProcessStarted] != float64(num(e, "dropped")) {
				t.Errorf("events.dropped types %v; want all %s", e.Data["types"], api.EventProcessStarted)
			}
		default:
			life = append(life, e.Type)
		}
	}
	want := []string{api.EventSandboxCreated, api.EventSandboxStopped, api.EventSandboxStarted, api.EventSandboxDestroyed}
	if !slices.Equal(life, want) {
		t.Errorf("lifecycle events %v; want %v", life, want)
	}
	if most := int64(budget.Burst) + int64(budget.Rate*elapsed.Seconds()) + 1; kept > most {
		t.Errorf("%d of %d process events recorded in %s; want at most %d", kept, flood, elapsed, most)
	}
	if kept+dropped != flood {
		t.Errorf("%d recorded and %d counted as dropped; want %d in all", kept, dropped, flood)
	}
}

// TestDropsReportedOnceQuiet: the report of drops waits until the
// sandbox has been quiet, and one flood makes one report.
func TestDropsReportedOnceQuiet(t *testing.T) {
	f := newLiveFixture(t, func(c *Config) {
		c.Events = events.New(c.Store, events.Config{Budget: events.Budget{Rate: 1, Burst: 5, Quiet: 200 * time.Millisecond, ReportEvery: time.Hour}})
	})
	sb := f.create(t)
	rec, err := f.st.GetSandbox(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		f.svc.emit(f.ctx, rec, api.EventProcessExited, "process exited", map[string]any{"pid": i})
	}
	if got := allEvents(t, f.st, f.ctx, sb.ID, api.EventEventsDropped); len(got) != 0 {
		t.Fatalf("a report of drops while still flooding: %v", got)
	}
	var got []store.Event
	for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = allEvents(t, f.st, f.ctx, sb.ID, api.EventEventsDropped)
	}
	kept := len(allEvents(t, f.st, f.ctx, sb.ID, api.EventProcessExited))
	if len(got) != 1 || num(got[0], "dropped") != int64(100-kept) || kept < 5 {
		t.Fatalf("after the flood: %d kept, reports %v; want one report of the %d dropped", kept, got, 100-kept)
	}
	if want := fmt.Sprintf("%d events of this sandbox were not recorded", 100-kept); !strings.HasPrefix(got[0].Message, want) {
		t.Errorf("report message %q; want it to start %q", got[0].Message, want)
	}
}

// TestBudgetPerSandbox: the budget holds whoever records a sandbox's
// events (the gateway and the router record through the EventLog with
// store.Record), each sandbox has its own, and a tenant's own events
// (no sandbox) are not a sandbox's to spend.
func TestBudgetPerSandbox(t *testing.T) {
	budget := events.Budget{Rate: 0.001, Burst: 10, Quiet: time.Hour, ReportEvery: time.Hour}
	f := newLiveFixture(t, func(c *Config) { c.Events = events.New(c.Store, events.Config{Budget: budget}) })
	noisy, quiet := f.create(t), f.create(t)
	tenant := tenantOf(t, f)
	log := f.svc.Config().Log
	for range 100 {
		events.Record(f.svc.events, log, &events.Event{TenantID: tenant, SandboxID: noisy.ID, Type: api.EventProviderCall, Message: "refused"})
	}
	for range 5 {
		events.Record(f.svc.events, log, &events.Event{TenantID: tenant, SandboxID: quiet.ID, Type: api.EventProviderCall, Message: "ok"})
	}
	for range 50 {
		events.Record(f.svc.events, log, &events.Event{TenantID: tenant, Type: api.EventSecretUpdated, Message: "replaced"})
	}
	f.svc.events.FlushDrops("")
	if got := len(allEvents(t, f.st, f.ctx, noisy.ID, api.EventProviderCall)); got != budget.Burst {
		t.Errorf("the noisy sandbox has %d provider.call events; want its burst, %d", got, budget.Burst)
	}
	if got := allEvents(t, f.st, f.ctx, noisy.ID, api.EventEventsDropped); len(got) != 1 || num(got[0], "dropped") != 100-int64(budget.Burst) {
		t.Errorf("the noisy sandbox's drop reports: %v; want one of %d", got, 100-budget.Burst)
	}
	if got := len(allEvents(t, f.st, f.ctx, quiet.ID, api.EventProviderCall)); got != 5 {
		t.Errorf("the quiet sandbox has %d provider.call events; want all 5", got)
	}
	evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{Types: []string{api.EventSecretUpdated}, Limit: store.MaxLimit})
	if err != nil || len(evs) != 50 {
		t.Errorf("the tenant's own events: %d, %v; want all 50", len(evs), err)
	}
}

func tenantOf(t *testing.T, f *liveFixture) string {
	t.Helper()
	p, ok := tenancy.From(f.ctx)
	if !ok {
		t.Fatal("no tenant")
	}
	return p.TenantID
}
