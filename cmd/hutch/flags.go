package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandArgs returns the positional arguments of a command that runs a
// command of its own (exec, start, shell, run, app task), whose cobra
// flag parsing stops at the first positional argument. Flags may follow
// each of the first lead positionals; after them, the first further
// argument that is not a flag starts the command, kept as written with
// everything after it, and "--" ends the flags at any point: with lead
// 1, `exec ID ls -la` gives [ID ls -la] and `exec ID --cwd /w -- ls`
// gives [ID ls].
func commandArgs(cmd *cobra.Command, args []string, lead int) ([]string, error) {
	var pos []string
	fs := cmd.Flags()
	for {
		switch {
		case len(args) == 0:
			return pos, nil
		case args[0] == "--":
			return append(pos, args[1:]...), nil
		case len(pos) >= lead:
			return append(pos, args...), nil
		}
		pos = append(pos, args[0])
		rest := args[1:]
		if err := fs.Parse(rest); err != nil {
			return nil, usagef("%s", err)
		}
		if help, _ := fs.GetBool("help"); help {
			return nil, pflag.ErrHelp // cobra prints the help
		}
		args = fs.Args()
		if used := len(rest) - len(args); used > 0 && rest[used-1] == "--" {
			return append(pos, args...), nil
		}
	}
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

func (f *kvFlag) Type() string { return "K=V" }

// durationFlag is a duration on the command line, the CLI's one unit
// convention: Go's syntax (90s, 30m, 1h30m). A bare number is taken as
// seconds, as flags that took seconds did before.
type durationFlag time.Duration

// parseDuration reads a duration the CLI's way; it may not be negative.
func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 90s, 30m or 2h", s)
	}
	return d, nil
}

func (d *durationFlag) Set(s string) error {
	v, err := parseDuration(s)
	*d = durationFlag(v)
	return err
}

func (d *durationFlag) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Type() string { return "duration" }

// seconds is d in whole seconds, rounded up.
func (d durationFlag) seconds() int {
	return int((time.Duration(d) + time.Second - 1) / time.Second)
}
