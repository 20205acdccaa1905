// Package telemetry owns hutch's Prometheus metrics: one registry of its
// own (never the client library's global one, so nothing a dependency
// registers leaks into the scrape and tests build as many as they like)
// holding the Go runtime and process collectors and the hutch_* metrics,
// and the handler that serves it (Handler).
//
// The parts report through small interfaces of their own that Metrics
// implements, so none of them imports this package: sandbox.Observer
// (creates, commands, calls through the door), egress.Observer (each
// connection's verdict and bytes), gateway.Observer (provider calls). The
// API's latency comes through Route, which internal/edge/httpapi wraps around
// each route of its table. The number of sandboxes is counted at each
// scrape (sandboxes.go), by the control tier's sandbox.Directory: the
// metrics are built before the sandbox service, which reports to them.
//
// Every label takes its values from a set fixed by the code or the
// operator: a route's pattern, never a request's path; a driver, a state,
// an error class, a status; never a sandbox, a tenant or a key.
//
// Lifecycle: New registers everything and starts nothing; the Metrics is
// ready at once and safe for concurrent use. Route and Unmatched of a nil
// *Metrics hand the handler back as it is, for an API built without one.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/egress"
	"github.com/hutchdev/hutch/internal/edge/gateway"
)

// Config is what the metrics read from.
type Config struct {
	// Sandboxes counts sandboxes by state and driver at each scrape;
	// required.
	Sandboxes SandboxCounter
	Log       *slog.Logger
}

// Metrics is the hutch_* metrics and the handler of the registry that
// holds them.
type Metrics struct {
	handler http.Handler

	requests     *prometheus.HistogramVec // route, method, code
	creates      *prometheus.HistogramVec // driver, result
	execs        *prometheus.HistogramVec // driver, result
	agentCalls   *prometheus.CounterVec   // op, result
	egressConns  *prometheus.CounterVec   // decision
	egressBytes  *prometheus.CounterVec   // direction
	gatewayCalls *prometheus.CounterVec   // provider, code
}

var (
	_ sandbox.Observer = (*Metrics)(nil)
	_ egress.Observer  = (*Metrics)(nil)
	_ gateway.Observer = (*Metrics)(nil)
)

// The buckets of the latency histograms, in seconds.
var (
	// A create is a driver making a root and starting an agent: tens of
	// milliseconds from a warm pool, seconds from an image.
	createBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	// An exec is its command's whole run: from a millisecond (true) to
	// the longest commands agents run.
	execBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800}
)

// New builds the registry and registers every metric.
func New(cfg Config) (*Metrics, error) {
	if cfg.Sandboxes == nil {
		return nil, errors.New("telemetry: Sandboxes is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hutch_http_request_duration_seconds",
			Help: "Time an API request took, by route pattern (\"unmatched\": no route), method and status; " +
				"for a stream, a transfer or a command (a long route) the time to its status line, not its whole life.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method", "code"}),
		creates: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hutch_sandbox_create_seconds",
			Help:    "Time a sandbox create (fork and restore included) took once its driver was chosen, by driver and result (ok or the error class).",
			Buckets: createBuckets,
		}, []string{"driver", "result"}),
		execs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hutch_exec_seconds",
			Help: "Time a command run through the API took, start to exit as its caller saw it (run-to-completion and streamed), " +
				"by driver and result (ok: its exit was seen; canceled: the caller left first; or the error class).",
			Buckets: execBuckets,
		}, []string{"driver", "result"}),
		agentCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_agent_calls_total",
			Help: "Calls to sandbox agents through the sandbox service, by operation and result (ok or the error class; " +
				"unavailable: the agent did not answer).",
		}, []string{"op", "result"}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_egress_connections_total",
			Help: "Connections through the sandboxes' egress proxies, counted as they end, by decision (allowed, denied by policy, failed to connect).",
		}, []string{"decision"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_egress_bytes_total",
			Help: "Bytes carried by the sandboxes' egress connections, counted as each ends, by direction (out: from the sandbox).",
		}, []string{"direction"}),
		gatewayCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hutch_gateway_requests_total",
			Help: "Calls to the provider gateway, refused ones included, by provider (empty: none of this server's) and status.",
		}, []string{"provider", "code"}),
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newSandboxCollector(cfg.Sandboxes),
		m.requests, m.creates, m.execs, m.agentCalls, m.egressConns, m.egressBytes, m.gatewayCalls,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn),
		// A store that fails to count leaves the rest of the scrape whole;
		// promhttp_metric_handler_errors_total says it happened.
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            reg,
		MaxRequestsInFlight: 4,
	})
	return m, nil
}

// Handler serves the metrics in the Prometheus exposition formats (text
// unless the scraper asks for another). It checks no key: the API's route
// does, and the separate listener must be reachable only by scrapers.
func (m *Metrics) Handler() http.Handler { return m.handler }

// ObserveCreate implements sandbox.Observer.
func (m *Metrics) ObserveCreate(driver string, d time.Duration, err error) {
	m.creates.WithLabelValues(driver, result(err)).Observe(d.Seconds())
}

// ObserveExec implements sandbox.Observer.
func (m *Metrics) ObserveExec(driver string, d time.Duration, err error) {
	m.execs.WithLabelValues(driver, result(err)).Observe(d.Seconds())
}

// ObserveCall implements sandbox.Observer.
func (m *Metrics) ObserveCall(op string, err error) {
	m.agentCalls.WithLabelValues(op, result(err)).Inc()
}

// ObserveEgress implements egress.Observer.
func (m *Metrics) ObserveEgress(verdict string, bytesOut, bytesIn int64) {
	m.egressConns.WithLabelValues(verdict).Inc()
	if bytesOut > 0 {
		m.egressBytes.WithLabelValues("out").Add(float64(bytesOut))
	}
	if bytesIn > 0 {
		m.egressBytes.WithLabelValues("in").Add(float64(bytesIn))
	}
}

// ObserveGatewayCall implements gateway.Observer.
func (m *Metrics) ObserveGatewayCall(provider string, status int) {
	m.gatewayCalls.WithLabelValues(provider, strconv.Itoa(status)).Inc()
}

// result is an outcome as a label: ok, canceled, or the error's class
// (errdefs: not_found, conflict, unavailable…; internal when it has none).
func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	class, _, _ := errdefs.Classify(err)
	if class == nil {
		return "internal"
	}
	return strings.ReplaceAll(class.Error(), " ", "_")
}
