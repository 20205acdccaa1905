package main

import (
	"context"
	"strconv"
)

// runInfo is `hutch info`: the server's version, driver, isolation and
// everything degraded about it.
func runInfo(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "info", "hutch info [--json]")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "info takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, info)
	}
	tw := newTable(e.stdout)
	row(tw, "server:", e.cfg.URL)
	row(tw, "version:", info.Version)
	row(tw, "driver:", info.Driver+" ("+info.Isolation+" isolation)")
	row(tw, "default limits:", formatLimits(info.Limits.Default))
	row(tw, "max limits:", formatLimits(info.Limits.Max))
	row(tw, "max timeout:", strconv.Itoa(info.Limits.MaxTimeoutS)+" s")
	for _, d := range info.Degraded {
		row(tw, "DEGRADED:", d)
	}
	return tw.Flush()
}
