package process_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/drivertest"
	"github.com/hutchdev/hutch/internal/driver/process"
	"github.com/hutchdev/hutch/internal/testutil"
)

var agentPath string

func TestMain(m *testing.M) {
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
	base, err := os.MkdirTemp("", "hutch-process-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "sandboxes")
	drivertest.Run(t, drivertest.Suite{
		New: func(t *testing.T) driver.Driver {
			d, err := process.New(process.Config{Dir: dir, AgentPath: agentPath, WarmPool: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := d.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d
		},
		Leftovers: func(id string) []string {
			if _, err := os.Lstat(filepath.Join(dir, id)); err == nil {
				return []string{filepath.Join(dir, id)}
			}
			return nil
		},
	})
}
