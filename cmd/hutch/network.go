package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newNetworkCmd is `hutch network get|set ID`: a sandbox's egress policy.
func newNetworkCmd(e *env) *cobra.Command {
	return newGroup("network", "Show or change a sandbox's egress policy", "",
		newNetworkGetCmd(e), newNetworkSetCmd(e))
}

func newNetworkGetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "get ID",
		Short:             "Show a sandbox's egress policy and what went through it",
		Args:              nArgs(1, 1, "network get takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			n, err := c.Network(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printNetwork(e, n)
		},
	}
}

const networkSetLong = `Sets the sandbox's egress policy; its next connection sees it.

  --egress public      the internet, nothing private (the default)
  --egress none        nothing
  --egress allowlist   only what --allow names: host names (registry.npmjs.org),
                       wildcards (*.example.com), either with a port
                       (api.example.com:443), IP addresses and CIDRs`

func newNetworkSetCmd(e *env) *cobra.Command {
	var p api.NetworkPolicy
	cmd := &cobra.Command{
		Use:               "set ID --egress public|none|allowlist [--allow HOST]…",
		Short:             "Change a sandbox's egress policy",
		Long:              networkSetLong,
		Args:              nArgs(1, 1, "network set takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case p.Egress == "" && len(p.Allow) > 0:
				p.Egress = api.EgressAllowlist
			case p.Egress == "":
				return usagef("network set needs --egress public, none or allowlist")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			n, err := c.SetNetwork(cmd.Context(), args[0], p)
			if err != nil {
				return err
			}
			return printNetwork(e, n)
		},
	}
	cmd.Flags().StringVar(&p.Egress, "egress", "", "the `policy`: public, none or allowlist")
	cmd.Flags().StringArrayVar(&p.Allow, "allow", nil, "with allowlist, a `destination` the sandbox may reach (repeatable)")
	return cmd
}

// printNetwork shows a sandbox's egress policy and its counters.
func printNetwork(e *env, n api.Network) error {
	if e.json {
		return printJSON(e.stdout, n)
	}
	tw := newTable(e.stdout)
	row(tw, "egress:", n.Policy.Egress)
	if n.Policy.Egress == api.EgressAllowlist {
		row(tw, "allow:", orDash(strings.Join(n.Policy.Allow, ", ")))
	}
	row(tw, "connections:", fmt.Sprintf("%s allowed, %s denied", strconv.FormatInt(n.Allowed, 10), strconv.FormatInt(n.Denied, 10)))
	row(tw, "bytes:", formatBytes(n.BytesOut)+" out, "+formatBytes(n.BytesIn)+" in")
	return tw.Flush()
}
