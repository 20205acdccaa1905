package drivertest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

func testLimits(t *testing.T, s Suite) {
	d := s.New(t)
	caps := d.Capabilities().Limits
	if !caps.Memory && !caps.Pids {
		t.Skip("the driver enforces no memory or pids limit here")
	}
	if caps.Memory {
		t.Run("Memory", func(t *testing.T) {
			sb := create(t, d, spec(api.Limits{MemoryMB: 64}))
			// tail keeps a whole line in memory: 512 MiB without a newline.
			res := run(t, sb, "/bin/sh", "-c", "head -c 536870912 /dev/zero | tail -n 1 | wc -c")
			if res.ExitCode == 0 && strings.TrimSpace(res.Stdout) == "536870912" {
				t.Fatalf("a 512 MiB allocation succeeded under a 64 MiB limit: %+v", res)
			}
			// The sandbox survives and still runs commands.
			if got := sh(t, sb, "echo alive"); got != "alive\n" {
				t.Fatalf("after the memory hog: %q", got)
			}
		})
	}
	if caps.Pids {
		t.Run("Pids", func(t *testing.T) {
			sb := create(t, d, spec(api.Limits{Pids: 32}))
			// A fork bomb held by the limit: at most 32 sleepers start.
			res := run(t, sb, "/bin/sh", "-c",
				`n=0; for i in $(seq 1 200); do sleep 30 & if [ $? -eq 0 ]; then n=$((n+1)); fi; done 2>/dev/null; echo $n`)
			started := len(commandsOf(sb.id, "sleep\x0030\x00"))
			if started >= 32 || started == 0 {
				t.Fatalf("%d sleepers running under a pids limit of 32 (%+v)", started, res)
			}
			// The host is still fine: this test process can fork.
			if err := exec.Command("/bin/true").Run(); err != nil {
				t.Fatalf("host cannot fork: %v", err)
			}
		})
	}
}
