package main

import (
	"fmt"
	"strings"
	"time"
)

// printFloors prints the floors table, and a line for each floor skipped.
func printFloors(fl floors) {
	f := pct(fl.forkExec.runs, 50)
	fmt.Println("### Floors")
	fmt.Println("| floor | n | p50 | p95 | p50 / fork/exec |")
	fmt.Println("|---|---|---|---|---|")
	var notes []string
	for _, x := range []floor{fl.forkExec, fl.bwrap, fl.runc} {
		if !x.measured() {
			notes = append(notes, fmt.Sprintf("- %s: skipped: %s", x.name, x.skipped))
			continue
		}
		fmt.Printf("| %s | %d | %s | %s | %s |\n", x.name, len(x.runs), ms(pct(x.runs, 50)), ms(pct(x.runs, 95)), ratio(pct(x.runs, 50), f))
		if x.note != "" {
			notes = append(notes, fmt.Sprintf("- %s: %s", x.name, x.note))
		}
	}
	fmt.Println()
	if len(notes) > 0 {
		fmt.Println(strings.Join(notes, "\n"))
		fmt.Println()
	}
}

// printLifecycle prints the life-cycle table with the ratio of each p50 to
// each floor measured.
func printLifecycle(lc lifecycle, fl floors) {
	others := []floor{fl.forkExec}
	head := "| what | n | p50 | p95 | p50 / fork/exec p50 |"
	for _, x := range []floor{fl.bwrap, fl.runc} {
		if x.measured() {
			others = append(others, x)
			head += " p50 / " + strings.Fields(x.name)[0] + " p50 |"
		}
	}
	fmt.Printf("### Life cycle, %d sandboxes one by one\n", len(lc.createOnly))
	fmt.Println(head)
	fmt.Println("|---|---|---|---|" + strings.Repeat("---|", len(others)))
	row := func(name string, d []time.Duration) {
		p50 := pct(d, 50)
		fmt.Printf("| %s | %d | %s | %s |", name, len(d), ms(p50), ms(pct(d, 95)))
		for _, x := range others {
			fmt.Printf(" %s |", ratio(p50, pct(x.runs, 50)))
		}
		fmt.Println()
	}
	row("create (API answers 201)", lc.createOnly)
	row("create → first exec returns", lc.createExec)
	row("exec round trip (`true`)", lc.roundTrip)
	row("destroy", lc.destroy)
	fmt.Println()
}

// printAlive prints the density part: how many sandboxes lived at once,
// the memory each idle one costs, and the timings of using and
// destroying them all.
func printAlive(r aliveResult) {
	fmt.Printf("### %d sandboxes alive at once\n", r.n)
	fmt.Printf("Created %d of %d back to back in %.2f s; `true` ran in %d of them.\n", r.created, r.n, r.createAll.Seconds(), r.execOK)
	for _, e := range []string{r.createErr, r.execErr} {
		if e != "" {
			fmt.Println("First failure:", e)
		}
	}
	b, a := r.before.procs, r.after.procs
	fmt.Printf("Sandbox processes (every hutch-agent, and whatever else descends from this process), idle, before → after the creates: "+
		"%d → %d, of which hutch-agent %d → %d. Totals are after − before, so the warm pool's agents are left out.\n\n", b.procs, a.procs, b.agents, a.agents)
	if r.created > 0 {
		fmt.Println("| memory, idle | total | per sandbox | per sandbox ≤ 8 MiB? |")
		fmt.Println("|---|---|---|---|")
		memUnder := func(name string, total, limit int64) {
			per := total / int64(r.created)
			met := "yes"
			if per > limit {
				met = "no"
			}
			fmt.Printf("| %s | %s | %s | %s |\n", name, mib(total), size(per), met)
		}
		mem := func(name string, total int64) { memUnder(name, total, 8<<20) }
		mem("RSS sum (VmRSS)", a.rss-b.rss)
		mem("PSS sum (smaps_rollup)", a.pss-b.pss)
		if r.cgroup != "" {
			mem(fmt.Sprintf("this process's memory cgroup usage (holds %d of the %d)", a.inCgroup, a.procs), r.after.cgroup-r.before.cgroup)
		}
		if r.after.sandboxes >= 0 {
			mem("the sandboxes' own cgroups (agent and commands, kernel memory included)", r.after.sandboxes-max(r.before.sandboxes, 0))
		}
		mem("host MemAvailable drop", r.before.avail-r.after.avail)
		memUnder("hutch serve's own RSS (this process; ≤ 50 KiB each?)", r.after.self-r.before.self, 50<<10)
		memUnder("of it, Go heap and stacks in use (≤ 50 KiB each?)", r.after.heap-r.before.heap, 50<<10)
		fmt.Println()
		if r.cgroup != "" {
			fmt.Printf("The memory cgroup is this process's (%s): it counts pages, page cache and kernel memory (page tables, "+
				"namespaces, sockets) of what runs in it and below it, and nothing else on the host. "+
				"MemAvailable is the whole host's, so anything else running moves it too.\n\n", r.cgroup)
		}
	}
	if r.idle.window > 0 {
		fmt.Println(r.idle.String())
		fmt.Println()
	}
	fmt.Println("| what | n | p50 | p95 | total |")
	fmt.Println("|---|---|---|---|---|")
	row := func(name string, d []time.Duration, total time.Duration) {
		if len(d) == 0 {
			fmt.Printf("| %s | 0 | – | – | – |\n", name)
			return
		}
		fmt.Printf("| %s | %d | %s | %s | %.2f s |\n", name, len(d), ms(pct(d, 50)), ms(pct(d, 95)), total.Seconds())
	}
	row("create, all kept alive", r.create, r.createAll)
	var execAll time.Duration
	for _, d := range r.exec {
		execAll += d
	}
	row("exec `true` in each", r.exec, execAll)
	row("destroy each", r.destroy, r.destroyAll)
	fmt.Println()
}

// ratio formats a / b as "4.2×", or "0.04×" below 1.
func ratio(a, b time.Duration) string {
	r := float64(a) / float64(b)
	if r < 1 {
		return fmt.Sprintf("%.2f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// size is b in MiB, or in KiB below one MiB.
func size(b int64) string {
	if b > -(1<<20) && b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return mib(b)
}
