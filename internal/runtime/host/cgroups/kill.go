package cgroups

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// freezeWait bounds how long one round of Kill waits for a group to freeze.
// A task in an uninterruptible sleep can hold a v1 group in FREEZING; the
// round then signals what it has and tries again.
const freezeWait = time.Second

// Kill SIGKILLs every process in <id> and the groups below it and waits
// until none is left, or fails when ctx ends first. On v2 it writes
// cgroup.kill, which the kernel applies to the whole subtree at once,
// forks included. Without it, the first rounds SIGKILL what they find
// (enough for tasks already dying, the common case once a sandbox's init
// is dead); later rounds freeze the group (v1 freezer or v2 cgroup.freeze,
// when there is one) so nothing forks or exits while its pids are read,
// SIGKILL them, and thaw it so the signals land. A group that was frozen
// before (a paused sandbox) is thawed after its first signals, so they
// land before any of its tasks runs again.
func (g *Group) Kill(ctx context.Context) error {
	killFile := ""
	if g.m.version == 2 {
		if f := g.path(g.m.hiers[0], "cgroup.kill"); exists(f) {
			killFile = f
		}
	}
	return g.kill(ctx, killFile)
}

// plainRounds are the rounds Kill signals without freezing.
const plainRounds = 2

// kill is Kill with the choice of cgroup.kill made: "" signals process by
// process.
func (g *Group) kill(ctx context.Context, killFile string) error {
	wait := time.Millisecond
	for round := 0; ; round++ {
		pids, err := g.Procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			// A kill the control plane's crash cut short between a
			// round's freeze and its thaw leaves the group frozen once
			// its dying tasks are gone: the agent a start puts in it
			// next would freeze before it is ready.
			return g.Thaw()
		}
		switch {
		case killFile != "":
			err = writeFile(killFile, "1")
		case round < plainRounds:
			err = signal(pids)
		default:
			err = g.signalAll(ctx)
		}
		if err == nil {
			err = g.Thaw()
		}
		if err != nil {
			return err
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("cgroups: kill %s: %d processes left: %w", g.id, len(pids), err)
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// signalAll is one round of killing without cgroup.kill: freeze, SIGKILL
// every pid, thaw.
func (g *Group) signalAll(ctx context.Context) (retErr error) {
	thaw, err := g.freeze(ctx)
	if err != nil {
		return err
	}
	defer func() { retErr = errors.Join(retErr, thaw()) }()
	pids, err := g.Procs()
	if err != nil {
		return err
	}
	return signal(pids)
}

// signal SIGKILLs pids; one already gone is not an error.
func signal(pids []int) error {
	for _, pid := range pids {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("cgroups: kill %d: %w", pid, err)
		}
	}
	return nil
}

// freeze stops every task of the group, waiting up to freezeWait for the
// kernel to finish, and returns how to thaw it. Without a freezer it does
// nothing.
func (g *Group) freeze(ctx context.Context) (thaw func() error, err error) {
	ctx, cancel := context.WithTimeout(ctx, freezeWait)
	defer cancel()
	thaw, _, err = g.Freeze(ctx)
	return thaw, err
}

// Freeze stops every process of the group and the groups below it (v1
// freezer, v2 cgroup.freeze) until thaw is called, and waits until ctx
// ends for the kernel to report them stopped, reading the freezer's own
// state (v1 freezer.state FROZEN, v2 cgroup.events "frozen 1"); frozen
// says whether it did. A task stops only once it is scheduled, so a group
// starved of CPU, by its own limit or a busy host, takes as long as the
// scheduler takes to run each of its tasks once (seconds, on a busy
// host), and a task in an uninterruptible sleep holds it back for as long
// as the sleep: ctx is the caller's bound. A group not frozen in time is
// left freezing until thaw is called. A group frozen already (a paused
// sandbox) stays so: its thaw does nothing. Without a freezer it does
// nothing, and says so (frozen false).
func (g *Group) Freeze(ctx context.Context) (thaw func() error, frozen bool, err error) {
	nothing := func() error { return nil }
	fz, ok := g.freezer()
	if !ok {
		return nothing, false, nil
	}
	if ok, err := fz.done(); err != nil {
		return nothing, false, err
	} else if ok {
		return nothing, true, nil
	}
	thaw = g.Thaw
	if err := writeFile(fz.file, fz.frozen); err != nil {
		return nothing, false, err
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		ok, err := fz.done()
		if err != nil {
			return nothing, false, errors.Join(err, thaw())
		}
		if ok {
			return thaw, true, nil
		}
		if sleep(ctx, wait) != nil {
			return thaw, false, nil
		}
		if fz.again {
			if err := writeFile(fz.file, fz.frozen); err != nil {
				return nothing, false, errors.Join(err, thaw())
			}
		}
	}
}

// Thaw lets every process of a frozen group run again. A group that is
// not frozen, or has no freezer, is left as it is.
func (g *Group) Thaw() error {
	fz, ok := g.freezer()
	if !ok {
		return nil
	}
	return writeFile(fz.file, fz.thawed)
}

// CanFreeze says whether the manager's groups have a freezer: the v1
// freezer hierarchy, or cgroup.freeze on v2.
func (m *Manager) CanFreeze() bool {
	if m.version == 2 {
		return true
	}
	_, ok := m.find(freezer)
	return ok
}

// freezerFiles are where a group's freezer is read and set.
type freezerFiles struct {
	file, frozen, thawed string
	// done reads whether the kernel reports the group frozen.
	done func() (bool, error)
	// again says to write frozen again while the group is freezing, as
	// runc does on v1: the v1 freezer can miss a task forked while the
	// group freezes, and each write has it freeze every task it finds
	// anew. v2 follows forks itself.
	again bool
}

// freezer returns the group's freezer files, false when it has none.
func (g *Group) freezer() (freezerFiles, bool) {
	var fz freezerFiles
	if g.m.version == 2 {
		h := g.m.hiers[0]
		fz = freezerFiles{file: g.path(h, "cgroup.freeze"), frozen: "1", thawed: "0", done: func() (bool, error) {
			n, err := readKey(g.path(h, "cgroup.events"), "frozen")
			return n == 1, err
		}}
	} else if h, ok := g.m.find(freezer); ok {
		file := g.path(h, "freezer.state")
		fz = freezerFiles{file: file, frozen: "FROZEN", thawed: "THAWED", again: true, done: func() (bool, error) {
			s, err := readFile(file)
			return s == "FROZEN", err
		}}
	}
	return fz, fz.file != "" && exists(fz.file)
}
