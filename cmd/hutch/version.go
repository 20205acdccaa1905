package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
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

// versionInfo is `hutch version --json`.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// newVersionCmd is `hutch version`, the same as `hutch --version`.
func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hutch's version",
		Args:  nArgs(0, 0, "version takes no arguments"),
		RunE: func(*cobra.Command, []string) error {
			if e.json {
				return printJSON(e.stdout, versionInfo{Version: hutchVersion(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintln(e.stdout, versionLine())
			return err
		},
	}
}
