package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// completionTimeout bounds the requests a shell completion makes.
const completionTimeout = 3 * time.Second

// completeSandboxes completes sandbox ids from the server's list: the
// first argument, or with many every argument. It offers nothing when the
// server cannot be asked.
func completeSandboxes(e *env, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := e.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		var out []cobra.Completion
		for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			if sb.State != api.StateDestroyed && strings.HasPrefix(sb.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(sb.ID, string(sb.State)+" "+sb.Template))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeProcesses completes ID PID: a sandbox id, then the pid of one
// of its processes.
func completeProcesses(e *env) cobra.CompletionFunc {
	ids := completeSandboxes(e, false)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return ids(cmd, args, toComplete)
		}
		c, err := e.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		l, err := c.ListProcesses(ctx, args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, p := range l.Processes {
			if pid := strconv.Itoa(p.PID); p.Running && strings.HasPrefix(pid, toComplete) {
				out = append(out, cobra.CompletionWithDesc(pid, strings.Join(p.Cmd, " ")))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
