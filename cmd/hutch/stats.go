package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// statsEvery is how often `hutch stats` refreshes its table.
const statsEvery = time.Second

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// newStatsCmd is `hutch stats [--no-stream] [ID…]`: what sandboxes use,
// as `docker stats` shows containers: a table redrawn every second until
// interrupted, of the sandboxes named or else of every running or paused
// one (those that start or stop meanwhile come and go). A named sandbox
// that is not running shows dashes. --no-stream prints one table; when
// stdout is not a terminal, each table is printed after the last as plain
// lines. Under --json each sandbox's metrics are one line of the API's
// JSON.
func newStatsCmd(e *env) *cobra.Command {
	var noStream bool
	cmd := &cobra.Command{
		Use:               "stats [--no-stream] [ID…]",
		Short:             "Show live CPU, memory, network, pids and disk of sandboxes",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeSandboxes(e, true),
		RunE: func(cmd *cobra.Command, ids []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			redraw := !noStream && !e.json && isTerminalWriter(e.stdout)
			tick := time.NewTicker(statsEvery)
			defer tick.Stop()
			for first := true; ; first = false {
				rows, err := collectStats(ctx, c, ids, first)
				if ctx.Err() != nil {
					return nil // interrupted: the way a live table ends
				}
				if err != nil {
					return err
				}
				if e.json {
					err = printStatsJSON(e.stdout, rows)
				} else {
					if redraw {
						io.WriteString(e.stdout, clearScreen)
					}
					err = printStats(e.stdout, rows)
				}
				if err != nil || noStream {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		},
	}
	cmd.Flags().BoolVar(&noStream, "no-stream", false, "print one table and exit")
	return cmd
}

// statsRow is one sandbox's line; m is nil when it has no figures (it is
// not running, or gone).
type statsRow struct {
	id string
	m  *api.SandboxMetrics
}

// collectStats reads the metrics of the sandboxes named, or of every
// running or paused one when none is. A named sandbox the server does
// not know fails the first round; one that is not running, or is gone
// later, gets a row without figures.
func collectStats(ctx context.Context, c *client.Client, named []string, first bool) ([]statsRow, error) {
	ids := named
	if len(named) == 0 {
		for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
			if err != nil {
				return nil, err
			}
			if sb.State == api.StateRunning || sb.State == api.StatePaused {
				ids = append(ids, sb.ID)
			}
		}
	}
	rows := make([]statsRow, 0, len(ids))
	for _, id := range ids {
		m, err := c.SandboxMetrics(ctx, id)
		var apiErr *client.Error
		switch {
		case err == nil:
			rows = append(rows, statsRow{id: id, m: &m})
		case !errors.As(err, &apiErr):
			return nil, err
		case apiErr.StatusCode == http.StatusNotFound && first && len(named) > 0:
			return nil, err // no such sandbox
		case apiErr.StatusCode == http.StatusConflict || apiErr.StatusCode == http.StatusNotFound:
			if len(named) > 0 {
				rows = append(rows, statsRow{id: id})
			} // else it stopped or went since the listing
		default:
			return nil, err
		}
	}
	return rows, nil
}

// printStats writes one table of rows.
func printStats(w io.Writer, rows []statsRow) error {
	tw := newTable(w)
	row(tw, "SANDBOX", "CPU %", "MEM USAGE / LIMIT", "MEM %", "NET I/O", "PIDS", "DISK")
	for _, r := range rows {
		row(tw, statsColumns(r)...)
	}
	return tw.Flush()
}

// statsColumns are a row's columns: "-" for what its sandbox's driver
// cannot measure, or for every figure of a sandbox that has none.
func statsColumns(r statsRow) []string {
	if r.m == nil {
		return []string{r.id, "-", "-", "-", "-", "-", "-"}
	}
	m := r.m
	has := func(figure string) bool { return !slices.Contains(m.Unsupported, figure) }
	cols := []string{r.id, "-", "-", "-", "-", "-", "-"}
	if has("cpu") {
		cols[1] = formatPercent(m.CPU.Percent)
	}
	if has("memory") {
		limit := "-"
		if m.Memory.LimitBytes > 0 {
			limit = formatBytes(m.Memory.LimitBytes)
			cols[3] = formatPercent(float64(m.Memory.UsageBytes) / float64(m.Memory.LimitBytes) * 100)
		}
		cols[2] = formatBytes(m.Memory.UsageBytes) + " / " + limit
	}
	if has("network") {
		cols[4] = formatBytes(int64(m.Network.RxBytes)) + " / " + formatBytes(int64(m.Network.TxBytes))
	}
	if has("pids") {
		cols[5] = strconv.Itoa(m.Pids.Current)
	}
	if has("disk") {
		cols[6] = formatBytes(m.Disk.UsageBytes)
		if m.Disk.LimitBytes > 0 {
			cols[6] += " / " + formatBytes(m.Disk.LimitBytes)
		}
	}
	return cols
}

// printStatsJSON writes each sandbox's metrics as one line of JSON.
func printStatsJSON(w io.Writer, rows []statsRow) error {
	for _, r := range rows {
		if r.m == nil {
			continue
		}
		if err := printJSONLine(w, r.m); err != nil {
			return err
		}
	}
	return nil
}

// formatPercent is a percentage with two decimals, as docker stats shows.
func formatPercent(p float64) string {
	return strconv.FormatFloat(p, 'f', 2, 64) + "%"
}

// formatBytes is n in binary units: 512B, 1.5KiB, 12.3MiB.
func formatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + string(units[i]) + "iB"
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
