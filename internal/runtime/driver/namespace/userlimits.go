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

// hostUserLimits are what the driver raises root's host-wide limits to at
// start (never lowers them): room for many sandboxes' shares, which all
// count against root. They are the init user namespace's
// user.max_inotify_*, written under their fs.inotify names, which need no
// CAP_SYS_RESOURCE.
var hostUserLimits = map[string]int64{
	"fs/inotify/max_user_instances": 65536,
	"fs/inotify/max_user_watches":   4 << 20,
}

// raiseHostUserLimits raises hostUserLimits where the host's are lower, and
// says so.
func raiseHostUserLimits(log *slog.Logger) error {
	for name, want := range hostUserLimits {
		p := "/proc/sys/" + name
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		have, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || have >= want {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.FormatInt(want, 10)), 0); err != nil {
			return fmt.Errorf("raise %s: %w", p, err)
		}
		log.Info("raised a host limit: every sandbox's user namespace is charged to hutch's user", "sysctl", strings.ReplaceAll(name, "/", "."), "from", have, "to", want)
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
