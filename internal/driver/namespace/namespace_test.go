package namespace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/drivertest"
	"github.com/hutchdev/hutch/internal/driver/namespace"
	"github.com/hutchdev/hutch/internal/ids"
	"github.com/hutchdev/hutch/internal/testutil"
)

var agentPath string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		// TestConformance says why it skips.
		os.Exit(m.Run())
	}
	dir, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		panic(err)
	}
	agentPath = filepath.Join(dir, "hutch-agent")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the namespace driver needs root (to map each sandbox to its own host uids); CI runs this as root")
	}
	base, err := os.MkdirTemp("", "hutch-namespace-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "sandboxes")
	parent := "hutch-test-" + ids.New()[20:]
	drivertest.Run(t, drivertest.Suite{
		New: func(t *testing.T) driver.Driver {
			d, err := namespace.New(namespace.Config{Dir: dir, AgentPath: agentPath, WarmPool: 2, CgroupParent: parent})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d
		},
		Leftovers: func(id string) []string {
			var left []string
			if _, err := os.Lstat(filepath.Join(dir, id)); err == nil {
				left = append(left, filepath.Join(dir, id))
			}
			cgs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent + "/" + id)
			return append(left, cgs...)
		},
		Escape:    true,
		HostPaths: []string{base, filepath.Dir(agentPath)},
	})
	// The test's cgroup parent goes with it.
	parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	for _, p := range parents {
		os.Remove(p)
	}
}
