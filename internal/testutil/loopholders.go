package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/runtime/host/loopdev"
)

// holder is a mount namespace other than the test binary's that still
// has a mount of a loop device, named by one process in it.
type holder struct {
	pid  int
	comm string
}

func (h holder) String() string { return fmt.Sprintf("%s (pid %d)", h.comm, h.pid) }

// loopHolders looks through every mount namespace on the host for a mount
// of dev. ours says whether the test binary's own namespace has one (a
// mount the test leaked); others names one process in each other
// namespace that has one: a copy of the host's mounts some process took
// (a warm namespace-driver sandbox of another package's test server keeps
// one until it is claimed), which frees dev, by autoclear, when it ends.
func loopHolders(dev string) (ours bool, others []holder) {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	seen := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		ns, err := os.Readlink(filepath.Join(p, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		b, err := os.ReadFile(filepath.Join(p, "mountinfo"))
		if err != nil || !mountsSource(string(b), dev) {
			continue
		}
		if ns == self {
			ours = true
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		others = append(others, holder{pid: pid, comm: strings.TrimSpace(string(comm))})
	}
	return ours, others
}

// mountsSource reports whether a mountinfo table has a mount whose source
// is dev (the field after the " - " separator and the type).
func mountsSource(mountinfo, dev string) bool {
	for line := range strings.Lines(mountinfo) {
		_, after, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(after); len(f) > 1 && f[1] == dev {
			return true
		}
	}
	return false
}

// WaitFreed waits for the loop device of fs, whose filesystem the test
// unmounted, to detach. It fails when fs is still mounted in the test
// binary's own namespace, or when the device stays attached for unseen,
// five seconds with no mount namespace showing it: something holds the
// filesystem where no mount table shows it (a descriptor or socket in a
// mount tree that was detached), which is a leak. While other namespaces
// show it (another test's sandbox starting, or a warm one waiting in its
// copy of the host's mounts), it waits for them up to patience.
func (fs *LoopFS) WaitFreed(unseen, patience time.Duration) error {
	start := time.Now()
	lastSeen := start
	for {
		if loopdev.Detached(fs.Device) {
			return nil
		}
		ours, others := loopHolders(fs.Device)
		now := time.Now()
		switch {
		case ours:
			if now.Sub(start) > unseen {
				return fmt.Errorf("%s is still mounted in the test's own mount namespace", fs.Device)
			}
		case len(others) > 0:
			lastSeen = now
			if now.Sub(start) > patience {
				return fmt.Errorf("%s is still held, after %v, by the mount namespaces of %v", fs.Device, patience, others)
			}
		case now.Sub(lastSeen) > unseen:
			return fmt.Errorf("%s is still attached %v after its filesystem was unmounted and no mount namespace shows it: something holds the filesystem unseen", fs.Device, unseen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
