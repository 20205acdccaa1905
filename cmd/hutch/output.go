package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hutchdev/hutch/api"
)

// printJSON writes v as indented JSON, the --json output of every command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine writes v as one line of JSON, the --json output of a
// stream (events, watch, stats, logs).
func printJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// printResult prints v, what a command made or changed, as JSON under
// --json, else line: what names it (an id, a path, a URL).
func printResult(e *env, v any, line any) error {
	if e.json {
		return printJSON(e.stdout, v)
	}
	_, err := fmt.Fprintln(e.stdout, line)
	return err
}

// printDone ends a command that did something to each of many things
// and returns err: under --json it prints done, a JSON array of what it
// did; otherwise it has printed each as it went.
func printDone[T any](e *env, done []T, err error) error {
	if !e.json {
		return err
	}
	if perr := printJSON(e.stdout, done); err == nil {
		err = perr
	}
	return err
}

// printList prints items as a JSON array (empty, never null) or as a
// table: header, then cells of each item.
func printList[T any](w io.Writer, asJSON bool, items []T, header []string, cells func(T) []string) error {
	if asJSON {
		if items == nil {
			items = []T{}
		}
		return printJSON(w, items)
	}
	tw := newTable(w)
	row(tw, header...)
	for _, it := range items {
		row(tw, cells(it)...)
	}
	return tw.Flush()
}

// newTable returns a tabwriter for column output; Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

// row writes one tab-separated row.
func row(w io.Writer, cols ...string) {
	fmt.Fprintln(w, strings.Join(cols, "\t"))
}

// formatAge is a short age such as 45s, 12m, 5h or 3d; "-" for no time.
func formatAge(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// formatTime is an absolute time with its age, or "-".
func formatTime(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return t.Local().Format(time.RFC3339) + " (in " + formatAge(*t, now) + ")"
	}
	return t.Local().Format(time.RFC3339) + " (" + formatAge(now, *t) + " ago)"
}

// formatLabels lists labels as k=v in key order, comma-separated.
func formatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// formatLimits describes limits; zero fields are "default".
func formatLimits(l api.Limits) string {
	f := func(v, unit string, zero bool) string {
		if zero {
			return "default"
		}
		return v + unit
	}
	return "memory " + f(strconv.Itoa(l.MemoryMB), " MB", l.MemoryMB == 0) +
		", cpu " + f(strconv.FormatFloat(l.CPU, 'g', -1, 64), "", l.CPU == 0) +
		", pids " + f(strconv.Itoa(l.Pids), "", l.Pids == 0)
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
