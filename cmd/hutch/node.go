package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newNodeCmd is `hutch node`.
func newNodeCmd(e *env) *cobra.Command {
	return newGroup("node", "List, drain, activate and remove the nodes of the fleet (admin)", "",
		newNodeLsCmd(e), newNodeDrainCmd(e), newNodeActivateCmd(e), newNodeRmCmd(e))
}

// newNodeLsCmd is `hutch node ls`: every node, its state, load and
// heartbeat.
func newNodeLsCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the nodes: state (active, draining, lost), load, drivers, labels, last heartbeat",
		Args:    nArgs(0, 0, "use: hutch node ls"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			l, err := c.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			return printList(e.stdout, e.json, l.Nodes,
				[]string{"NAME", "STATE", "RUNNING", "MEMORY", "CPUS", "DRIVERS", "LABELS", "HEARTBEAT", "ADVERTISE"}, nodeCells)
		},
	}
}

// nodeCells is one node's row of hutch node ls.
func nodeCells(n api.Node) []string {
	state := n.State
	if len(n.Leases) > 0 {
		state += " (" + strings.Join(n.Leases, ",") + ")"
	}
	memory := formatBytes(n.CommittedMemoryBytes) + "/"
	if n.MemoryBytes > 0 {
		memory += formatBytes(n.MemoryBytes)
	} else {
		memory += "-"
	}
	cpus := "-"
	if n.CPUs > 0 {
		cpus = strconv.FormatFloat(n.CPUs, 'g', -1, 64)
	}
	return []string{n.Name, state, strconv.Itoa(n.Running), memory, cpus, orDash(strings.Join(n.Drivers, ",")),
		formatLabels(n.Labels), (time.Duration(n.HeartbeatAgeMS) * time.Millisecond).Round(100*time.Millisecond).String() + " ago", n.Advertise}
}

// newNodeDrainCmd is `hutch node drain NAME [--deadline 10m]`.
func newNodeDrainCmd(e *env) *cobra.Command {
	var deadline time.Duration
	cmd := &cobra.Command{
		Use:   "drain NAME [--deadline 10m]",
		Short: "Drain a node: no new sandboxes on it; with --deadline, those it still runs are stopped then",
		Args:  nArgs(1, 1, "use: hutch node drain NAME [--deadline 10m]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if deadline < 0 {
				return usagef("--deadline must not be negative")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			n, err := c.DrainNode(cmd.Context(), args[0], deadline)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, n)
			}
			fmt.Fprintln(e.stdout, n.Name)
			if n.DrainDeadline != nil {
				fmt.Fprintf(e.stderr, "hutch: node %s is draining: no new sandboxes; those it runs are stopped at %s\n",
					n.Name, formatTime(time.Now(), n.DrainDeadline))
			} else {
				fmt.Fprintf(e.stderr, "hutch: node %s is draining: no new sandboxes; those it runs are left to finish\n", n.Name)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&deadline, "deadline", 0, "stop the sandboxes the node still runs after this long (default: never)")
	return cmd
}

// newNodeActivateCmd is `hutch node activate NAME`: the end of a drain.
func newNodeActivateCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "activate NAME",
		Short: "End a node's drain: it takes new sandboxes again",
		Args:  nArgs(1, 1, "use: hutch node activate NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			n, err := c.ActivateNode(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printResult(e, n, n.Name)
		},
	}
}

// newNodeRmCmd is `hutch node rm NAME`: a lost node removed for good.
func newNodeRmCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a lost node for good: its sandboxes that are not destroyed fail (any node then destroys them)",
		Args:  nArgs(1, 1, "use: hutch node rm NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			return removeUntilError(e, args, func(name string) error { return c.RemoveNode(cmd.Context(), name) })
		},
	}
}
