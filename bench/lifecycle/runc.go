package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// runcFloor times n runs of `runc run` of the bundle runcSpec describes,
// each with its own container id, under a state directory of its own.
// It tries a user namespace (root → host runcHostID) first and, if runc
// refuses it here, measures without one; the floor's name says which.
func runcFloor(n int) floor {
	f := floor{name: "runc run `true`"}
	path, err := exec.LookPath("runc")
	if err != nil {
		f.skipped = "runc not found on PATH (bash bench/setup.sh installs it)"
		return f
	}
	dir, err := os.MkdirTemp("", "hutch-bench-runc-")
	if err != nil {
		f.skipped = err.Error()
		return f
	}
	defer os.RemoveAll(dir)
	// The container's mapped root must reach the bundle.
	if err := os.Chmod(dir, 0o711); err != nil {
		f.skipped = err.Error()
		return f
	}
	state, bundle := filepath.Join(dir, "state"), filepath.Join(dir, "bundle")
	if err := os.Mkdir(bundle, 0o755); err != nil {
		f.skipped = err.Error()
		return f
	}
	// Relative: runc places it under its own cgroup, once per hierarchy.
	cgroup := fmt.Sprintf("hutch-bench-runc-%d", os.Getpid())

	i := 0
	run := func() *exec.Cmd {
		i++
		id := fmt.Sprintf("hutch-bench-%d-%d", os.Getpid(), i)
		return exec.Command(path, "--root", state, "run", "--bundle", bundle, id)
	}
	// A container a failed run leaves behind goes before the next run.
	sweep := func() { runcSweep(path, state) }
	defer sweep()

	var refused string
	for _, userns := range []bool{true, false} {
		if err := writeBundle(bundle, runcSpec(userns, cgroup)); err != nil {
			f.skipped = err.Error()
			return f
		}
		runs, why := timeTool(n, run, sweep)
		switch {
		case why == "" && userns:
			f.name += fmt.Sprintf(" (userns maps uid 0 → host %d)", runcHostID)
			f.runs = runs
			return f
		case why == "":
			f.name += " (no user namespace)"
			f.note = "runc refused a user namespace here, so it ran without one: " + refused
			f.runs = runs
			return f
		case userns:
			refused = why
		default:
			f.skipped = "with a user namespace: " + refused + "; without one: " + why
		}
	}
	return f
}

// runcSweep force-deletes every container left in state, as a run that
// fails part-way can leave one.
func runcSweep(runc, state string) {
	ents, err := os.ReadDir(state)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			_ = exec.Command(runc, "--root", state, "delete", "-f", e.Name()).Run()
		}
	}
}
