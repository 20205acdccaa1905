package process_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/drivertest"
	"github.com/hutchdev/hutch/internal/driver/process"
)

var agentPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hutch-agent-bin-")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755)
	agentPath = filepath.Join(dir, "hutch-agent")
	build := exec.Command("go", "build", "-o", agentPath, "github.com/hutchdev/hutch/cmd/hutch-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("build hutch-agent: " + err.Error())
	}
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
			d, err := process.New(process.Config{Dir: dir, AgentPath: agentPath})
			if err != nil {
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
