package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps hutch-agent small: it may link only the standard library,
// golang.org/x/sys and the few hutch packages below.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/hutchdev/hutch/cmd/hutch-agent":           true,
		"github.com/hutchdev/hutch/internal/agent":            true,
		"github.com/hutchdev/hutch/internal/agent/agentproto": true,
		"github.com/hutchdev/hutch/internal/agent/confine":    true,
		"github.com/hutchdev/hutch/internal/agent/envelope":   true,
		"github.com/hutchdev/hutch/internal/agent/files":      true,
		"github.com/hutchdev/hutch/internal/agent/history":    true,
		"github.com/hutchdev/hutch/internal/agent/httpio":     true,
		"github.com/hutchdev/hutch/internal/agent/nsinit":     true,
		"github.com/hutchdev/hutch/internal/agent/proc":       true,
		"github.com/hutchdev/hutch/internal/agent/supervisor": true,
		"github.com/hutchdev/hutch/internal/agent/tunnel":     true,
		"github.com/hutchdev/hutch/internal/agent/watch":      true,
		"github.com/hutchdev/hutch/internal/base/dirent":      true,
		"github.com/hutchdev/hutch/internal/base/errdefs":     true,
		"github.com/hutchdev/hutch/internal/base/logattr":     true,
		"github.com/hutchdev/hutch/internal/base/mountinfo":   true,
		"github.com/hutchdev/hutch/internal/base/osthread":    true,
		"github.com/hutchdev/hutch/internal/base/sparse":      true,
		// The app supervisor reads the app's manifest.
		"github.com/hutchdev/hutch/internal/agent/manifest": true,
		"go.yaml.in/yaml/v3": true,
	}
	allowedPrefixes := []string{
		"golang.org/x/sys/",
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		ok := allowed[p]
		for _, pre := range allowedPrefixes {
			ok = ok || strings.HasPrefix(p, pre)
		}
		if !ok {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("hutch-agent links packages it must not:\n  %s", strings.Join(bad, "\n  "))
	}
}
