package main

import (
	"strconv"

	"github.com/spf13/cobra"
)

// newInfoCmd is `hutch info`: the server's version, driver, isolation and
// everything degraded about it.
func newInfoCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show the server's driver, limits and features",
		Args:  nArgs(0, 0, "info takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			info, err := c.Info(cmd.Context())
			if err != nil {
				return err
			}
			if e.json {
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
		},
	}
}
