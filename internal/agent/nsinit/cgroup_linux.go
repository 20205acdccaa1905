package nsinit

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Box puts commands into the sandbox's cgroup once they start, where the
// cgroup version needs it. Its zero value (no cgroup, or cgroup v1, where
// commands are born in place) does nothing.
type Box struct {
	procs *os.File // v2: the box's cgroup.procs, opened while in view

	egressDir  *os.File // the egress socket's directory, O_PATH
	egressName string
	egressPass bool // Config.EgressPass
}

// Adopt moves the command pid (in the agent's pid namespace) into the box.
func (b *Box) Adopt(pid int) error {
	if b == nil || b.procs == nil {
		return nil
	}
	if _, err := fmt.Fprintf(b.procs, "%d\n", pid); err != nil {
		return fmt.Errorf("nsinit: move command %d into the sandbox cgroup: %w", pid, err)
	}
	return nil
}

// Close releases the box's files.
func (b *Box) Close() {
	if b == nil {
		return
	}
	if b.procs != nil {
		b.procs.Close()
	}
	if b.egressDir != nil {
		b.egressDir.Close()
	}
}

// HasEgress reports whether the sandbox has an egress channel.
func (b *Box) HasEgress() bool { return b != nil && b.egressDir != nil }

// EgressPass reports whether the control plane takes the sandbox's
// connections whole over the egress channel (Config.EgressPass).
func (b *Box) EgressPass() bool { return b != nil && b.egressPass }

// DialEgress opens a channel to the control plane's egress proxy, through
// the directory kept open from before the pivot (no path of the host is
// in view any more; /proc/self/fd still leads to it).
func (b *Box) DialEgress(ctx context.Context) (net.Conn, error) {
	p := "/proc/self/fd/" + strconv.Itoa(int(b.egressDir.Fd())) + "/" + b.egressName
	var d net.Dialer
	return d.DialContext(ctx, "unix", p)
}

// enterCgroup makes commands start in the sandbox's cgroup, and gives the
// thread that forks them a cgroup namespace rooted there, so
// /proc/self/cgroup inside shows "/" and no host path. Without a cgroup
// (j nil) the namespace is rooted where the agent is.
//
// On cgroup v1 a single thread can change cgroups: the fork thread moves
// itself into the box, and every child it forks is born there. On cgroup
// v2 a process moves whole: the host placed the agent in the box, the fork
// thread takes its namespace there, the agent moves itself out to its own
// cgroup, and each command is moved into the box right after it starts.
func enterCgroup(j *CgroupJoin, onForkThread func(func() error) error) (*Box, error) {
	if j == nil {
		// No cgroup of its own (rootless): the namespace still hides the
		// host's cgroup paths.
		return &Box{}, onForkThread(unshareCgroup)
	}
	switch j.Version {
	case 1:
		err := onForkThread(func() error {
			if err := JoinThread(j.BoxTasks, unix.Gettid()); err != nil {
				return err
			}
			return unshareCgroup()
		})
		return &Box{}, err
	case 2:
		procs, err := os.OpenFile(j.BoxProcs, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("nsinit: %w", err)
		}
		if err := onForkThread(unshareCgroup); err != nil {
			procs.Close()
			return nil, err
		}
		// Written from a thread still in the host's cgroup namespace, which
		// sees both cgroups; 0 names the writing process.
		if err := MoveProcess(j.AgentProcs, 0); err != nil {
			procs.Close()
			return nil, err
		}
		return &Box{procs: procs}, nil
	}
	return nil, fmt.Errorf("nsinit: unknown cgroup version %d", j.Version)
}

func unshareCgroup() error {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("nsinit: unshare the cgroup namespace: %w", err)
	}
	return nil
}
