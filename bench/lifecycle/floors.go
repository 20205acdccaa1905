package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// floor is one thing hutch is measured against: its timings, or why it was
// not measured.
type floor struct {
	name    string          // as printed in the tables
	runs    []time.Duration // empty when skipped
	skipped string          // why runs is empty
	note    string          // printed under the table
}

func (f floor) measured() bool { return len(f.runs) > 0 }

// floors are the three floors of one run. forkExec is always measured;
// bwrap and runc only when asked for and installed.
type floors struct {
	forkExec, bwrap, runc floor
}

// bwrapArgs runs /bin/true in a sandbox comparable to hutch's: new user,
// mount, pid, net, ipc, uts and cgroup namespaces (--unshare-all), a fresh
// /proc, a minimal /dev, a tmpfs /tmp and a root holding only a read-only
// /usr with Debian 12's merged-/usr symlinks.
var bwrapArgs = []string{
	"--unshare-all", "--die-with-parent",
	"--ro-bind", "/usr", "/usr",
	"--symlink", "usr/bin", "/bin",
	"--symlink", "usr/lib", "/lib",
	"--symlink", "usr/lib64", "/lib64",
	"--symlink", "usr/sbin", "/sbin",
	"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	"--", "/bin/true",
}

// measureFloors times execs runs of fork/exec `/bin/true` and, when others
// is set, n runs each of bwrap and runc running it.
func measureFloors(n, execs int, others bool) (floors, error) {
	var fl floors
	fl.forkExec.name = "fork/exec `true`"
	var err error
	fl.forkExec.runs, err = timeN(execs, func() error { return exec.Command("/bin/true").Run() })
	if err != nil {
		return fl, fmt.Errorf("fork/exec floor: %w", err)
	}
	fl.bwrap = floor{name: "bwrap `--unshare-all` `true`", skipped: "not asked for (-floors=false)"}
	fl.runc = floor{name: "runc run `true`", skipped: "not asked for (-floors=false)"}
	if others && n > 0 {
		fl.bwrap = bwrapFloor(n)
		fl.runc = runcFloor(n)
	}
	return fl, nil
}

// bwrapFloor times n runs of bwrapArgs. As root, bwrap's user namespace
// maps the sandbox's root to host root (uid 0 → 0, one id), which the name
// says.
func bwrapFloor(n int) floor {
	f := floor{name: "bwrap `--unshare-all` `true`"}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		f.skipped = "bwrap not found on PATH (bash bench/setup.sh installs it)"
		return f
	}
	if os.Geteuid() == 0 {
		f.name += " (userns maps uid 0 → host 0)"
	}
	f.runs, f.skipped = timeTool(n, func() *exec.Cmd { return exec.Command(path, bwrapArgs...) }, nil)
	return f
}

// timeTool runs a trial of the command cmd makes, then times n more, each
// from start to exit; after, if set, runs after each command, untimed. A
// failure skips the floor with the command's own words rather than
// failing the benchmark.
func timeTool(n int, cmd func() *exec.Cmd, after func()) ([]time.Duration, string) {
	runs := make([]time.Duration, 0, n)
	for i := 0; i <= n; i++ {
		c := cmd()
		start := time.Now()
		err := runQuiet(c)
		d := time.Since(start)
		if after != nil {
			after()
		}
		if err != nil {
			return nil, err.Error()
		}
		if i > 0 { // run 0 is the trial
			runs = append(runs, d)
		}
	}
	return runs, ""
}

// runQuiet runs c and, if it fails, returns an error carrying its stderr.
func runQuiet(c *exec.Cmd) error {
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return fmt.Errorf("%s: %w: %s", c.Args[0], err, msg)
	}
	return nil
}
