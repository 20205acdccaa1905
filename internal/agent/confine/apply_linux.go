package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func apply(c *Config) (Report, error) {
	var rep Report
	// Prepare: everything that can fail on bad input or a lacking kernel
	// runs before the first irreversible step.
	needAllThreads := c.NoNewPrivs
	var plan *landlockPlan
	if c.Landlock != nil {
		p, missing, err := prepareLandlock(c.Landlock)
		if err != nil {
			return Report{}, err
		}
		rep.Missing = append(rep.Missing, missing...)
		if p != nil {
			defer p.close()
			plan = p
			rep.LandlockABI = p.abi
			needAllThreads = needAllThreads || !p.tsync
		}
	}
	var filter []unix.SockFilter
	if c.Seccomp {
		if err := seccompUsable(); err != nil {
			rep.Missing = append(rep.Missing, MissingSeccomp)
		} else {
			f, err := buildFilter(c.RestrictSockets)
			if err != nil {
				return Report{}, err
			}
			filter = f
		}
	}
	if needAllThreads {
		if err := checkAllThreads(); err != nil {
			return Report{}, err
		}
	}

	// Commit, in the documented order.
	if err := applyRlimits(c.Rlimits); err != nil {
		return Report{}, err
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return Report{}, fmt.Errorf("confine: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	if c.NoNewPrivs {
		if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
			return Report{}, fmt.Errorf("confine: prctl(PR_SET_NO_NEW_PRIVS) on every thread: %w", err)
		}
	}
	if plan != nil {
		if err := plan.restrict(); err != nil {
			return Report{}, err
		}
	}
	if filter != nil {
		if err := installFilter(filter); err != nil {
			return Report{}, err
		}
		rep.Seccomp = true
	}
	return rep, nil
}

func probe() Report {
	var rep Report
	rep.LandlockABI = landlockABI()
	rep.Missing = landlockMissing(rep.LandlockABI, true, true)
	if seccompUsable() == nil {
		rep.Seccomp = true
	} else {
		rep.Missing = append(rep.Missing, MissingSeccomp)
	}
	return rep
}
