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
// but the standard library: axes with ticks at round values and their
// labels, a grid, and a legend naming each line. The x axis is linear from
// zero; the y axis too, or with logY logarithmic, where a line that keeps
// a ratio to another keeps its distance from it.
type lineChart struct {
	title, xLabel, yLabel string
	logY                  bool
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
	yMin := math.Inf(1)
	for _, s := range c.series {
		for _, p := range s.points {
			xMax, yMax = math.Max(xMax, p.x), math.Max(yMax, p.y)
			if p.y > 0 {
				yMin = math.Min(yMin, p.y)
			}
		}
	}
	xAxis, yAxis := linearAxis(xMax), linearAxis(yMax)
	if c.logY {
		yAxis = logAxis(yMin, yMax)
	}
	plotW, plotH := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	x0, y0 := float64(marginL), float64(marginT)+plotH
	px := func(x float64) float64 { return x0 + xAxis.at(x)*plotW }
	py := func(y float64) float64 { return y0 - yAxis.at(y)*plotH }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	text(b, chartW/2, 24, "middle", `font-size="14"`, c.title)
	for i, t := range xAxis.ticks {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x, marginT, x, y0)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, y0, x, y0+5)
		text(b, x, y0+18, "middle", "", xAxis.labels[i])
	}
	for i, t := range yAxis.ticks {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x0, y, x0+plotW, y)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0-5, y, x0, y)
		text(b, x0-8, y+4, "end", "", yAxis.labels[i])
	}
	fmt.Fprintf(b, `<path d="M%.1f %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", x0, marginT, y0, x0+plotW)
	text(b, x0+plotW/2, chartH-14, "middle", "", c.xLabel)
	text(b, 18, y0-plotH/2, "middle", fmt.Sprintf(`transform="rotate(-90 18 %.1f)"`, y0-plotH/2), c.yLabel)

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
		lx, ly := float64(chartW-marginR+20), float64(marginT+10+22*i)
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

// axis maps values to [0, 1] along the plot and holds its ticks, from the
// first to the last end to end, with their labels.
type axis struct {
	ticks  []float64
	labels []string
	at     func(v float64) float64
}

// linearAxis runs from 0 to at least top in about five steps of 1, 2 or 5
// times a power of ten; from 0 to 1 when top is not above 0.
func linearAxis(top float64) axis {
	if top <= 0 {
		top = 1
	}
	step := math.Pow(10, math.Floor(math.Log10(top/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top/(step*m) <= 6 {
			step *= m
			break
		}
	}
	digits := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var a axis
	for i := 0; i == 0 || a.ticks[i-1] < top-1e-9*step; i++ {
		v := float64(i) * step
		a.ticks = append(a.ticks, v)
		a.labels = append(a.labels, strconv.FormatFloat(v, 'f', digits, 64))
	}
	end := a.ticks[len(a.ticks)-1]
	a.at = func(v float64) float64 { return v / end }
	return a
}

// logAxis runs from the tick at or below lo to the one at or above hi,
// its ticks at 1, 2 and 5 times powers of ten; lo and hi are above 0 (a
// lo of +Inf, no value above 0, gives 1 to 10).
func logAxis(lo, hi float64) axis {
	if math.IsInf(lo, 1) || hi <= 0 {
		lo, hi = 1, 10
	}
	var a axis
	var exps []int
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi)))+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			a.ticks = append(a.ticks, m*math.Pow10(e))
			exps = append(exps, e)
		}
	}
	first, last := 0, len(a.ticks)-1
	for first+1 < len(a.ticks) && a.ticks[first+1] <= lo*(1+1e-9) {
		first++
	}
	for last-1 > first && a.ticks[last-1] >= hi*(1-1e-9) {
		last--
	}
	a.ticks = a.ticks[first : last+1]
	for i, v := range a.ticks {
		a.labels = append(a.labels, strconv.FormatFloat(v, 'f', max(0, -exps[first+i]), 64))
	}
	bottom, span := math.Log10(a.ticks[0]), math.Log10(a.ticks[len(a.ticks)-1]/a.ticks[0])
	a.at = func(v float64) float64 {
		if v <= 0 { // no log axis holds it: on the floor
			return 0
		}
		return max(0, (math.Log10(v)-bottom)/span)
	}
	return a
}
