package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLineChartSVG(t *testing.T) {
	for _, logY := range []bool{false, true} {
		c := lineChart{title: "p50 <& alive", xLabel: "sandboxes alive", yLabel: "p50, ms", logY: logY, series: []series{
			{name: "create", points: []point{{0, 10.2}, {100, 11.5}, {200, 12.1}, {300, 14.9}}},
			{name: "exec `true`", points: []point{{0, 1.9}, {100, 2.0}, {200, 2.2}, {300, 2.1}}},
			{name: "one point", points: []point{{0, 0.4}}},
			{name: "none", points: nil},
		}}
		checkSVG(t, c)
	}
}

// checkSVG checks that c draws as SVG that parses as XML, with one
// polyline per series through as many points as it has, finite
// coordinates, and its texts.
func checkSVG(t *testing.T, c lineChart) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	var polylines [][]string
	var texts []string
	d := xml.NewDecoder(&buf)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v\n%s", err, buf.String())
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local != "polyline" {
				continue
			}
			for _, a := range el.Attr {
				if a.Name.Local == "points" {
					polylines = append(polylines, strings.Fields(a.Value))
				}
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	var got, want []int
	for _, p := range polylines {
		got = append(got, len(p))
		for _, xy := range p {
			x, y, ok := strings.Cut(xy, ",")
			fx, errX := strconv.ParseFloat(x, 64)
			fy, errY := strconv.ParseFloat(y, 64)
			if !ok || errX != nil || errY != nil || math.IsInf(fx+fy, 0) || math.IsNaN(fx+fy) {
				t.Errorf("logY %v: point %q", c.logY, xy)
			}
		}
	}
	for _, s := range c.series {
		want = append(want, len(s.points))
		if !slices.Contains(texts, s.name) {
			t.Errorf("logY %v: no legend %q in %q", c.logY, s.name, texts)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("logY %v: points of each polyline (-want +got):\n%s", c.logY, diff)
	}
	for _, w := range []string{c.title, c.xLabel, c.yLabel, "300"} {
		if !slices.Contains(texts, w) {
			t.Errorf("logY %v: no text %q in %q", c.logY, w, texts)
		}
	}
}

func TestAxes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a      axis
		labels []string
	}{
		{"linear 300", linearAxis(300), []string{"0", "50", "100", "150", "200", "250", "300"}},
		{"linear 5000", linearAxis(5000), []string{"0", "1000", "2000", "3000", "4000", "5000"}},
		{"linear 14.9", linearAxis(14.9), []string{"0", "5", "10", "15"}},
		{"linear 0.37", linearAxis(0.37), []string{"0.0", "0.1", "0.2", "0.3", "0.4"}},
		{"linear nothing", linearAxis(0), []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{"log 1.4 to 103", logAxis(1.4, 103), []string{"1", "2", "5", "10", "20", "50", "100", "200"}},
		{"log 0.04 to 0.3", logAxis(0.04, 0.3), []string{"0.02", "0.05", "0.1", "0.2", "0.5"}},
		{"log 10 to 50, on ticks", logAxis(10, 50), []string{"10", "20", "50"}},
		{"log one value, on a tick", logAxis(20, 20), []string{"20", "50"}},
		{"log nothing", logAxis(math.Inf(1), 0), []string{"1", "2", "5", "10"}},
	} {
		if diff := cmp.Diff(tc.labels, tc.a.labels); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", tc.name, diff)
		}
		if len(tc.a.ticks) != len(tc.a.labels) {
			t.Errorf("%s: %d ticks, %d labels", tc.name, len(tc.a.ticks), len(tc.a.labels))
		}
		ends := []float64{tc.a.at(tc.a.ticks[0]), tc.a.at(tc.a.ticks[len(tc.a.ticks)-1])}
		if diff := cmp.Diff([]float64{0, 1}, ends, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("%s: where the first and last ticks sit (-want +got):\n%s", tc.name, diff)
		}
	}
}
