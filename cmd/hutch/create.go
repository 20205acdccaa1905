package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// createFlags are the flags of `sandbox create`, shared with `run`.
type createFlags struct {
	template string
	snapshot string
	env      kvFlag
	cwd      string
	memoryMB int
	cpu      float64
	pids     int
	timeout  durationFlag
	labels   kvFlag
	root     bool
}

// register adds the create flags to fs.
func (c *createFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.template, "template", "", "template `name` (server default when empty)")
	fs.StringVar(&c.snapshot, "snapshot", "", "start with a copy of this snapshot's files (`id`)")
	fs.Var(&c.env, "env", "environment variable of the sandbox (repeatable)")
	fs.StringVar(&c.cwd, "cwd", "", "working `directory` inside the sandbox")
	fs.IntVar(&c.memoryMB, "memory", 0, "memory limit in `MB` (0: server default)")
	fs.Float64Var(&c.cpu, "cpu", 0, "CPU limit in `cores` (0: server default)")
	fs.IntVar(&c.pids, "pids", 0, "process limit (0: server default)")
	fs.Var(&c.timeout, "timeout", "destroy the sandbox after this long (0: server default)")
	fs.Var(&c.labels, "label", "label (repeatable)")
	fs.BoolVar(&c.root, "root", false, "run the sandbox's commands as root inside it (drivers with the root_user feature)")
}

// create creates a sandbox from the flags and returns it with the client
// that made it.
func (c *createFlags) create(ctx context.Context, e *env) (*client.Client, *api.Sandbox, error) {
	req, err := c.request()
	if err != nil {
		return nil, nil, err
	}
	cl, err := e.client()
	if err != nil {
		return nil, nil, err
	}
	sb, err := cl.CreateSandbox(ctx, req)
	return cl, sb, err
}

// request turns the flags into a create request, refusing negative
// limits.
func (c *createFlags) request() (api.CreateSandboxRequest, error) {
	switch {
	case c.memoryMB < 0:
		return api.CreateSandboxRequest{}, usagef("--memory must not be negative")
	case c.cpu < 0:
		return api.CreateSandboxRequest{}, usagef("--cpu must not be negative")
	case c.pids < 0:
		return api.CreateSandboxRequest{}, usagef("--pids must not be negative")
	}
	req := api.CreateSandboxRequest{
		Template: c.template,
		Snapshot: c.snapshot,
		Env:      c.env.m,
		Cwd:      c.cwd,
		TimeoutS: c.timeout.seconds(),
		Labels:   c.labels.m,
		Root:     c.root,
	}
	if c.memoryMB != 0 || c.cpu != 0 || c.pids != 0 {
		req.Limits = &api.Limits{MemoryMB: c.memoryMB, CPU: c.cpu, Pids: c.pids}
	}
	return req, nil
}

func newSandboxCreateCmd(e *env) *cobra.Command {
	var cf createFlags
	cmd := &cobra.Command{
		Use:   "create [flags]",
		Short: "Create a sandbox and print its id",
		Args:  nArgs(0, 0, "sandbox create takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, sb, err := cf.create(cmd.Context(), e)
			if err != nil {
				return err
			}
			return printResult(e, sb, sb.ID)
		},
	}
	cf.register(cmd.Flags())
	return cmd
}
