package main

import (
	"fmt"
	"os"
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
	if r.restart != nil {
		fmt.Println(r.restart.String())
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

// printFleet prints what the probes of -alive found: each operation's p50
// and p95 at each number alive, and the ratio of its p50 at the most
// alive to its p50 at none.
func printFleet(r aliveResult) {
	fleet := r.fleet
	first, last := fleet[0], fleet[len(fleet)-1]
	fmt.Printf("### Cost as the fleet grows: p50 / p95 of %d calls of each, probed at 0 alive, every %d created and at the end\n",
		r.probeSamples, r.probeEvery)
	head, rule := "| sandboxes alive |", "|---|"
	for _, op := range probeOps {
		head, rule = head+" "+op.name+" |", rule+"---|"
	}
	head, rule = head+" sandboxes on the list's page |", rule+"---|"
	fmt.Println(head)
	fmt.Println(rule)
	for _, cp := range fleet {
		fmt.Printf("| %d |", cp.alive)
		for i := range probeOps {
			d := cp.times[i]
			cell := "–"
			if len(d) > 0 {
				cell = fmt.Sprintf("%.2f / %s", msf(pct(d, 50)), ms(pct(d, 95)))
			}
			if cp.failed[i] > 0 {
				cell += fmt.Sprintf(" (%d failed)", cp.failed[i])
			}
			fmt.Printf(" %s |", cell)
		}
		fmt.Printf(" %d |\n", cp.listed)
	}
	fmt.Printf("| p50 at %d / at 0 (target ≤ 1.2×) |", last.alive)
	for i := range probeOps {
		a, b := pct(last.times[i], 50), pct(first.times[i], 50)
		if a == 0 || b == 0 {
			fmt.Print(" – |")
			continue
		}
		fmt.Printf(" %.2f× |", float64(a)/float64(b))
	}
	fmt.Println(" |")
	fmt.Println()
	fmt.Println("One sandbox of the probe's own runs busybox httpd (exec, file write and preview go to it) besides those alive; " +
		"each create is of a fresh sandbox, destroyed untimed. The list is the first page at the server's default size, " +
		"every state (destroyed sandboxes keep their records, the probe's creates among them).")
	// A page of a few sandboxes costs less to show than a full one,
	// whatever the fleet: the list's flatness is read from its first
	// full page on.
	for _, cp := range fleet {
		if cp.listed == last.listed && cp.alive != first.alive && cp.alive != last.alive && len(cp.times[listOp]) > 0 && len(last.times[listOp]) > 0 {
			fmt.Printf("The list's page first held %d sandboxes at %d alive: its p50 at %d is %.2f× that.\n", cp.listed, cp.alive, last.alive,
				float64(pct(last.times[listOp], 50))/float64(pct(cp.times[listOp], 50)))
			break
		}
	}
	for _, cp := range fleet {
		if cp.firstErr != "" {
			fmt.Printf("First failure at %d alive: %s\n", cp.alive, cp.firstErr)
		}
	}
	fmt.Println()
}

// writeFleetChart writes to path an SVG chart of each operation's p50
// against the sandboxes alive at each probe, on a log scale: a 1.2× rise
// is as tall for a 1 ms call as for a 50 ms one.
func writeFleetChart(path, title string, fleet []checkpoint) error {
	c := lineChart{title: title, xLabel: "sandboxes alive", yLabel: "p50, ms (log scale)", logY: true}
	for i, op := range probeOps {
		s := series{name: op.name}
		for _, cp := range fleet {
			if len(cp.times[i]) > 0 {
				s.points = append(s.points, point{float64(cp.alive), msf(pct(cp.times[i], 50))})
			}
		}
		c.series = append(c.series, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := c.writeSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
