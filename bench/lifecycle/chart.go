package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// lineChart is a chart of lines through points, drawn as SVG with nothing
// but the standard library: axes from zero with ticks at round values,
// their labels, a grid, and a legend naming each line.
type lineChart struct {
	title, xLabel, yLabel string
	series                []series
}

// series is one line of a chart.
type series struct {
	name   string
	points []point
}

type point struct{ x, y float64 }

// The chart's geometry, in SVG user units: the whole picture, and the
// margins around the plot (the legend sits in the right one).
const (
	chartW, chartH                     = 800, 440
	marginL, marginR, marginT, marginB = 70, 200, 44, 56
)

// palette holds the lines' colours (Okabe and Ito's, told apart by
// readers with any common colour blindness), taken in turn.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// writeSVG draws the chart to w.
func (c lineChart) writeSVG(w io.Writer) error {
	var xMax, yMax float64
	for _, s := range c.series {
		for _, p := range s.points {
			xMax, yMax = math.Max(xMax, p.x), math.Max(yMax, p.y)
		}
	}
	xTicks, yTicks := ticks(xMax), ticks(yMax)
	xTop, yTop := xTicks[len(xTicks)-1], yTicks[len(yTicks)-1]
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	px := func(x float64) float64 { return marginL + x/xTop*plotW }
	py := func(y float64) float64 { return marginT + plotH - y/yTop*plotH }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	text(b, chartW/2, 24, "middle", "font-size=\"14\"", c.title)

	xDigits, yDigits := decimals(xTicks), decimals(yTicks)
	for _, t := range xTicks {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x, marginT, x, py(0))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, py(0), x, py(0)+5)
		text(b, x, py(0)+18, "middle", "", strconv.FormatFloat(t, 'f', xDigits, 64))
	}
	for _, t := range yTicks {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", marginL, y, px(xTop), y)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", marginL-5, y, marginL, y)
		text(b, marginL-8, y+4, "end", "", strconv.FormatFloat(t, 'f', yDigits, 64))
	}
	fmt.Fprintf(b, `<path d="M%d %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", marginL, marginT, py(0), px(xTop))
	text(b, marginL+plotW/2, chartH-14, "middle", "", c.xLabel)
	text(b, 18, marginT+plotH/2, "middle", fmt.Sprintf(`transform="rotate(-90 18 %.1f)"`, marginT+plotH/2), c.yLabel)

	for i, s := range c.series {
		colour := palette[i%len(palette)]
		coords := make([]string, len(s.points))
		for j, p := range s.points {
			coords[j] = fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(coords, " "), colour)
		for _, p := range s.points {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.x), py(p.y), colour)
		}
		ly := float64(marginT + 10 + 22*i)
		lx := float64(chartW - marginR + 20)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+24, ly, colour)
		text(b, lx+30, ly+4, "start", "", s.name)
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

// text writes s, escaped, at (x, y) anchored at anchor; attrs are further
// attributes, written as they are.
func text(w io.Writer, x, y float64, anchor, attrs, s string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>`, x, y, anchor, attrs)
	xml.EscapeText(w, []byte(s))
	fmt.Fprintln(w, "</text>")
}

// ticks returns round values from 0 to at least top, about five steps of
// 1, 2 or 5 times a power of ten; 0 and 1 when top is not above 0.
func ticks(top float64) []float64 {
	if top <= 0 {
		return []float64{0, 1}
	}
	step := math.Pow(10, math.Floor(math.Log10(top/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top/(step*m) <= 6 {
			step *= m
			break
		}
	}
	n := int(math.Ceil(top/step - 1e-9))
	out := make([]float64, n+1)
	for i := range out {
		out[i] = float64(i) * step
	}
	return out
}

// decimals is how many digits after the point show ticks' step.
func decimals(ticks []float64) int {
	return max(0, int(-math.Floor(math.Log10(ticks[1]-ticks[0])+1e-9)))
}
