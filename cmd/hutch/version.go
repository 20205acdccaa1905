package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion is the release, set at build time with
// -ldflags "-X main.buildVersion=v1.2.3".
var buildVersion string

// hutchVersion is buildVersion, else the main module's version when built
// with `go install`, else "dev".
func hutchVersion() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// runVersion prints hutch's version: `hutch version`.
func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "version", "hutch version")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "version takes no arguments")
	}
	fmt.Fprintf(e.stdout, "hutch %s (%s, %s/%s)\n", hutchVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
