package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// SandboxCounter counts sandboxes for the metrics (sandbox.Directory).
type SandboxCounter interface {
	// CountSandboxes counts every tenant's sandboxes by state and driver
	// (called with a system context).
	CountSandboxes(ctx context.Context) ([]sandbox.Count, error)
}

var _ SandboxCounter = (*sandbox.Directory)(nil)

// countTimeout bounds the count in one scrape.
const countTimeout = 5 * time.Second

// sandboxCollector is hutch_sandboxes, counted in the store at each
// scrape, so it is never out of step with the state machine and costs
// nothing between scrapes. A state and driver with no sandbox is left
// out.
type sandboxCollector struct {
	counter SandboxCounter
	desc    *prometheus.Desc
}

func newSandboxCollector(c SandboxCounter) *sandboxCollector {
	return &sandboxCollector{counter: c, desc: prometheus.NewDesc("hutch_sandboxes",
		"Sandboxes in the store (every tenant's, every node's), by state and driver.",
		[]string{"state", "driver"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *sandboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A count that fails is the
// scrape's error, reported by the handler; the other metrics are served.
func (c *sandboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(tenancy.System(context.Background()), countTimeout)
	defer cancel()
	counts, err := c.counter.CountSandboxes(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n.N), string(n.State), n.Driver)
	}
}
