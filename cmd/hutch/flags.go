package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// newFlags returns a flag set for one command whose -h and parse errors
// print usage (the synopsis line) and the flags to stderr.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n", usage)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(e.stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseArgs parses flags wherever they appear among args and returns the
// positional arguments. "--" ends the flags; everything after it is
// positional as written. When lead >= 0, once lead positionals are seen
// the first further non-flag argument starts a command, kept as written
// with everything after it: with lead 1, `exec ID ls -la` gives
// [ID ls -la], and `exec ID --cwd /w -- ls` gives [ID ls]. With lead < 0
// flags may follow any positional.
//
// A parse error has been printed with the usage and is errUsageShown;
// -h is flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string, lead int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsageShown
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		if lead >= 0 && len(pos) >= lead {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// errUsageShown is a usage error whose message and usage are already on
// stderr.
var errUsageShown = errors.New("usage error")

// usageError is a command line the command cannot use; it is printed with
// the command's usage and exits 2.
type usageError struct {
	fs  *flag.FlagSet
	msg string
}

func (u *usageError) Error() string { return u.msg }

// usagef returns a usage error for fs.
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{fs: fs, msg: fmt.Sprintf(format, args...)}
}

// kvFlag is a repeatable KEY=VALUE flag (--env, --label) gathering a map.
// A later value for the same key wins.
type kvFlag struct {
	m map[string]string
}

// Set parses one KEY=VALUE; the key may not be empty, the value may.
func (f *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	if k == "" {
		return fmt.Errorf("%q has an empty key", s)
	}
	if f.m == nil {
		f.m = map[string]string{}
	}
	f.m[k] = v
	return nil
}

// String lists the pairs in key order.
func (f *kvFlag) String() string {
	if f == nil || len(f.m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.m)) {
		parts = append(parts, k+"="+f.m[k])
	}
	return strings.Join(parts, ",")
}

// createFlags are the flags of `sandbox create`, shared with `run`.
type createFlags struct {
	template string
	env      kvFlag
	cwd      string
	memoryMB int
	cpu      float64
	pids     int
	timeoutS int
	labels   kvFlag
}

// register adds the create flags to fs.
func (c *createFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.template, "template", "", "template `name` (server default when empty)")
	fs.Var(&c.env, "env", "environment variable `K=V` of the sandbox (repeatable)")
	fs.StringVar(&c.cwd, "cwd", "", "working `directory` inside the sandbox")
	fs.IntVar(&c.memoryMB, "memory", 0, "memory limit in `MB` (0: server default)")
	fs.Float64Var(&c.cpu, "cpu", 0, "CPU limit in `cores` (0: server default)")
	fs.IntVar(&c.pids, "pids", 0, "process limit (0: server default)")
	fs.IntVar(&c.timeoutS, "timeout", 0, "destroy the sandbox after this many `seconds` (0: server default)")
	fs.Var(&c.labels, "label", "label `k=v` (repeatable)")
}

// create creates a sandbox from the flags and returns it with the client
// that made it.
func (c *createFlags) create(ctx context.Context, e *env, fs *flag.FlagSet) (*client.Client, *api.Sandbox, error) {
	req, err := c.request(fs)
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
func (c *createFlags) request(fs *flag.FlagSet) (api.CreateSandboxRequest, error) {
	switch {
	case c.memoryMB < 0:
		return api.CreateSandboxRequest{}, usagef(fs, "--memory must not be negative")
	case c.cpu < 0:
		return api.CreateSandboxRequest{}, usagef(fs, "--cpu must not be negative")
	case c.pids < 0:
		return api.CreateSandboxRequest{}, usagef(fs, "--pids must not be negative")
	case c.timeoutS < 0:
		return api.CreateSandboxRequest{}, usagef(fs, "--timeout must not be negative")
	}
	req := api.CreateSandboxRequest{
		Template: c.template,
		Env:      c.env.m,
		Cwd:      c.cwd,
		TimeoutS: c.timeoutS,
		Labels:   c.labels.m,
	}
	if c.memoryMB != 0 || c.cpu != 0 || c.pids != 0 {
		req.Limits = &api.Limits{MemoryMB: c.memoryMB, CPU: c.cpu, Pids: c.pids}
	}
	return req, nil
}
