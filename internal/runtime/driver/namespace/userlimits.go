package namespace

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// sandboxUserLimits are set in every sandbox's user namespace. The kernel
// charges what a namespace's processes hold to the namespace's owner on
// the host too (hutch's user, root), so without them one sandbox could take
// root's whole inotify budget, and every watcher on the host with it.
// Watches take kernel memory charged to the sandbox's memory limit.
var sandboxUserLimits = map[string]int64{
	"max_inotify_instances": 128,
	"max_inotify_watches":   65536,
}

// hostLimits are what the driver raises the host's limits to at start
// (never lowers them), each with why, as its log line says.
var hostLimits = []struct {
	sysctl string // under /proc/sys
	want   int64
	why    string
}{
	// Root's host-wide inotify limits: every sandbox's user namespace
	// counts against them (its share is sandboxUserLimits). They are the
	// init user namespace's user.max_inotify_*, written under their
	// fs.inotify names, which need no CAP_SYS_RESOURCE.
	{"fs/inotify/max_user_instances", 65536, "every sandbox's user namespace is charged to hutch's user"},
	{"fs/inotify/max_user_watches", 4 << 20, "every sandbox's user namespace is charged to hutch's user"},
	// Every thread takes a pid: a few thousand idle sandboxes, each an
	// agent of a few threads, pass the kernel's old default of 32,768
	// (systemd sets this same value at boot on 64-bit hosts).
	{"kernel/pid_max", 1 << 22, "each sandbox's agent and commands take pids, thousands of sandboxes more than 32,768"},
}

// raiseHostLimits raises hostLimits where the host's are lower, and says
// so.
func raiseHostLimits(log *slog.Logger) error {
	for _, l := range hostLimits {
		p := "/proc/sys/" + l.sysctl
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		have, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || have >= l.want {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.FormatInt(l.want, 10)), 0); err != nil {
			return fmt.Errorf("raise %s: %w", p, err)
		}
		log.Info("raised a host limit: "+l.why, "sysctl", strings.ReplaceAll(l.sysctl, "/", "."), "from", have, "to", l.want)
	}
	return nil
}

// userLimits are the limits of each sandbox's user namespace. Rootless,
// every sandbox is charged to hutch's own user, whose host limits hutch
// cannot raise: a sandbox then gets a quarter of what the host gives.
func userLimits(rootless bool) map[string]int64 {
	if !rootless {
		return sandboxUserLimits
	}
	out := make(map[string]int64, len(sandboxUserLimits))
	for name, v := range sandboxUserLimits {
		if b, err := os.ReadFile("/proc/sys/user/" + name); err == nil {
			if have, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				v = min(v, max(1, have/4))
			}
		}
		out[name] = v
	}
	return out
}
