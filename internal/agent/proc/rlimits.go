package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/base/osthread"
)

// setRlimits sets rs on the command pid has just started. The kernel lets
// the agent do it when their ids match or with CAP_SYS_RESOURCE, which
// the root of a container may lack (the kubernetes driver's agent, root,
// starts commands as the sandbox's user): then a thread of the agent's
// takes the command's ids, sets the limits and is thrown away. (Go's
// Setresuid would change every thread; the raw system calls change one.)
func setRlimits(pid int, rs []confine.Rlimit) error {
	err := confine.Prlimit(pid, rs)
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	uid, gid, ok := idsOf(pid)
	if !ok {
		return err
	}
	return osthread.Discarded(func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
			return fmt.Errorf("take gid %d to set a command's limits: %w", gid, e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			return fmt.Errorf("take uid %d to set a command's limits: %w", uid, e)
		}
		return confine.Prlimit(pid, rs)
	})
}

// idsOf is process pid's user and group, when its real, effective and
// saved ids are each one id.
func idsOf(pid int) (uid, gid uint32, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	ids := map[string]uint32{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, found := strings.Cut(line, ":")
		if !found || name != "Uid" && name != "Gid" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] != f[1] || f[1] != f[2] {
			return 0, 0, false
		}
		n, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return 0, 0, false
		}
		ids[name] = uint32(n)
	}
	u, uok := ids["Uid"]
	g, gok := ids["Gid"]
	return u, g, uok && gok
}
