package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLineChartSVG(t *testing.T) {
	c := lineChart{title: "p50 <& alive", xLabel: "sandboxes alive", yLabel: "p50, ms", series: []series{
		{name: "create", points: []point{{0, 10.2}, {100, 11.5}, {200, 12.1}, {300, 14.9}}},
		{name: "exec `true`", points: []point{{0, 1.9}, {100, 2.0}, {200, 2.2}, {300, 2.1}}},
		{name: "one point", points: []point{{0, 0.4}}},
	}}
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
	var got []int
	for _, p := range polylines {
		got = append(got, len(p))
	}
	if diff := cmp.Diff([]int{4, 4, 1}, got); diff != "" {
		t.Errorf("points of each polyline (-want +got):\n%s", diff)
	}
	for _, want := range []string{"p50 <& alive", "sandboxes alive", "p50, ms", "create", "exec `true`", "one point", "300", "0"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		top  float64
		want []float64
	}{
		{300, []float64{0, 50, 100, 150, 200, 250, 300}},
		{5000, []float64{0, 1000, 2000, 3000, 4000, 5000}},
		{14.9, []float64{0, 5, 10, 15}},
		{0.37, []float64{0, 0.1, 0.2, 0.3, 0.4}},
		{0, []float64{0, 1}},
	} {
		if diff := cmp.Diff(tc.want, ticks(tc.top), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("ticks(%v) (-want +got):\n%s", tc.top, diff)
		}
	}
}
