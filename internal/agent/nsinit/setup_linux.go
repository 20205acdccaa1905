package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Setup turns the namespaces the agent was started in into the sandbox.
// listen is called once the root is built and the host's paths are still
// in view (the agent's socket lives in the sandbox's host directory, out
// of the sandbox's reach once the root pivots). onForkThread runs a
// function on the one OS thread the agent forks every command from (see
// internal/agent/proc), which is how commands are born in the sandbox's cgroup
// and cgroup namespace. The returned Box places each command after it
// starts where the cgroup version needs that.
//
// Any error leaves the agent half set up; the caller must exit.
func Setup(c *Config, listen func() error, onForkThread func(func() error) error) (*Box, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Nothing mounted from here on reaches the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("nsinit: make mounts private: %w", err)
	}
	if err := setUserLimits(c.UserLimits); err != nil {
		return nil, err
	}
	if err := buildRoot(c); err != nil {
		return nil, err
	}
	if err := listen(); err != nil {
		return nil, err
	}
	box, err := enterCgroup(c.Cgroup, onForkThread)
	if err != nil {
		return nil, err
	}
	if c.Egress != "" {
		if box.egressDir, err = os.OpenFile(c.Path(filepath.Dir(c.Egress)), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			box.Close()
			return nil, fmt.Errorf("nsinit: open the egress directory: %w", err)
		}
		box.egressName = filepath.Base(c.Egress)
		box.egressPass = c.EgressPass
	}
	if c.DirFD != 0 {
		if err := unix.Close(c.DirFD); err != nil {
			box.Close()
			return nil, fmt.Errorf("nsinit: close the sandbox directory's descriptor: %w", err)
		}
	}
	if err := pivot(c.Rootfs); err != nil {
		box.Close()
		return nil, err
	}
	if err := unix.Sethostname([]byte(c.Hostname)); err != nil {
		box.Close()
		return nil, fmt.Errorf("nsinit: sethostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		box.Close()
		return nil, err
	}
	return box, nil
}

// pivot makes rootfs (relative to the working directory) the root of the
// mount namespace and detaches the old root, so no host path stays
// reachable. pivot_root(".", ".") stacks the old root under the new one,
// where the detach finds it.
func pivot(rootfs string) error {
	if err := unix.Chdir(rootfs); err != nil {
		return fmt.Errorf("nsinit: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("nsinit: pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("nsinit: detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("nsinit: %w", err)
	}
	return nil
}

// loopbackUp brings up lo, the sandbox's only network interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("nsinit: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("nsinit: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("nsinit: read lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("nsinit: bring lo up: %w", err)
	}
	return nil
}

// setUserLimits writes the limits of the agent's user namespace;
// /proc/sys/user shows the writer's namespace. It writes them through a
// procfs of its own, mounted over /proc for the moment (the sandbox's
// later makes /proc/sys read-only): every user namespace has its own
// entries of the same names under /proc/sys/user, and looked up through
// the host's procfs they would all hang off one directory, so each
// lookup would compare its name with one entry per sandbox on the host
// (4% of a busy host's time at 1,200 sandboxes, all in proc_sys_compare).
// A procfs mount of its own has a directory of its own.
func setUserLimits(limits map[string]int64) error {
	if len(limits) == 0 {
		return nil
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("nsinit: mount a procfs to set the user limits: %w", err)
	}
	var errs []error
	for name, v := range limits {
		p := "/proc/sys/user/" + name
		if err := os.WriteFile(p, []byte(strconv.FormatInt(v, 10)), 0); err != nil {
			errs = append(errs, fmt.Errorf("nsinit: set %s: %w", p, err))
		}
	}
	if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil {
		errs = append(errs, fmt.Errorf("nsinit: unmount the procfs of the user limits: %w", err))
	}
	return errors.Join(errs...)
}
