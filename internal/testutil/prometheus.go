package testutil

import (
	"io"
	"maps"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseMetrics parses a scrape in the Prometheus text format.
func ParseMetrics(t testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parse the metrics: %v", err)
	}
	return fams
}

// Series is the series of family name whose labels are exactly labels,
// or nil.
func Series(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, labels) {
			return m
		}
	}
	return nil
}
