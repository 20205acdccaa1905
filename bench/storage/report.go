package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/bench/internal/stat"
)

// printFS prints one filesystem's forks and snapshots, both sizes side by
// side.
func printFS(o options, r fsResult) {
	if len(r.sizes) == 0 {
		return
	}
	s := r.storage
	mem := "the server's default"
	if o.memoryMB > 0 {
		mem = fmt.Sprintf("%d MiB", o.memoryMB)
	}
	img := "written full"
	if o.sparse {
		img = "sparse"
	}
	fmt.Printf("### %s: backend %s, snapshots by %s (%d GiB loop image, %s; server warm pool %d; sandbox memory limit %s)\n",
		r.typ, orNone(s.Backend), s.Snapshot, o.fsGiB, img, o.warm, mem)
	var layers []string
	for _, sr := range r.sizes {
		layers = append(layers, fmt.Sprintf("%s: /workspace %s (du), %d files; the snapshot says %s in %d files",
			sr.size.label, mib(sr.workspaceKiB<<10), sr.size.files, mib(sr.snapBytes), sr.snapFiles))
	}
	fmt.Printf("%s. Copy method in the server's log: %s.\n\n", strings.Join(layers, "; "), methodOf(r))
	head := "| what | n |"
	sep := "|---|---|"
	for _, sr := range r.sizes {
		head += fmt.Sprintf(" %s p50 | %s p95 |", sr.size.label, sr.size.label)
		sep += "---|---|"
	}
	if len(r.sizes) == 2 {
		head += fmt.Sprintf(" %s / %s (p50) |", r.sizes[1].size.label, r.sizes[0].size.label)
		sep += "---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	row := func(name string, format func(time.Duration) string, get func(sizeResult) []time.Duration) {
		n := len(get(r.sizes[0]))
		if n == 0 { // a section -only left out
			return
		}
		fmt.Printf("| %s | %d |", name, n)
		for _, sr := range r.sizes {
			d := get(sr)
			if len(d) == 0 {
				fmt.Print(" – | – |")
				continue
			}
			fmt.Printf(" %s | %s |", format(pct(d, 50)), format(pct(d, 95)))
		}
		if len(r.sizes) == 2 {
			a, b := get(r.sizes[1]), get(r.sizes[0])
			if len(a) == 0 || len(b) == 0 || pct(b, 50) == 0 {
				fmt.Print(" – |")
			} else {
				fmt.Printf(" %s |", ratio(pct(a, 50), pct(b, 50)))
			}
		}
		fmt.Println()
	}
	row("fork, count 1 (API call)", ms, func(sr sizeResult) []time.Duration { return sr.fork })
	row("fork: sandbox paused (pause_ms)", wholeMS, func(sr sizeResult) []time.Duration { return sr.forkPause })
	row("fork: its snapshot, freeze → recorded (server log)", ms, func(sr sizeResult) []time.Duration { return sr.forkCapture })
	row("snapshot (API call)", ms, func(sr sizeResult) []time.Duration { return sr.snap })
	row("snapshot: sandbox paused (pause_ms)", wholeMS, func(sr sizeResult) []time.Duration { return sr.snapPause })
	row("snapshot: freeze → recorded (server log)", ms, func(sr sizeResult) []time.Duration { return sr.snapCapture })
	row("create from the snapshot (API call)", ms, func(sr sizeResult) []time.Duration { return sr.fromSnap })
	row("floor: create from host, nothing copied", ms, func(sr sizeResult) []time.Duration { return sr.create })
	row("floor: `cp -a --reflink=auto` of the same files, then syncfs", ms, func(sr sizeResult) []time.Duration { return sr.cp })
	fmt.Println()
}

// printFSSummary prints forks on every filesystem against the targets.
func printFSSummary(o options, all []fsResult) {
	if len(all) == 0 || len(all[0].sizes) != 2 || len(all[0].sizes[0].fork) == 0 {
		return
	}
	fmt.Printf("### Forks against the target (%d forks of count 1 each; p50)\n", o.n)
	fmt.Println("| filesystem: backend, copy | fork 10 MiB | fork 1 GiB | 1 GiB / 10 MiB | pause 10 MiB / 1 GiB | snapshot 10 MiB / 1 GiB | create from host (floor) 10 MiB / 1 GiB | target |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range all {
		small, big := r.sizes[0], r.sizes[1]
		f0, f1 := pct(small.fork, 50), pct(big.fork, 50)
		target := "measured and explained"
		if r.storage.Backend == "btrfs" {
			met := "met"
			if f0 > 50*time.Millisecond || f1 > 50*time.Millisecond || float64(f1) > 1.5*float64(f0) {
				met = "**not met**"
			}
			target = "≤ 50 ms each, within 1.5×: " + met
		}
		fmt.Printf("| %s: %s, %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s |\n",
			r.typ, orNone(r.storage.Backend), r.storage.Snapshot, ms(f0), ms(f1), ratio(f1, f0),
			wholeMS(pct(small.forkPause, 50)), wholeMS(pct(big.forkPause, 50)),
			ms(pct(small.snap, 50)), ms(pct(big.snap, 50)), ms(pct(small.create, 50)), ms(pct(big.create, 50)), target)
	}
	fmt.Println()
}

// printTemplates prints creates from the Debian image against creates from
// host, for each warm pool.
func printTemplates(o options, res []templateResult) {
	if len(res) == 0 {
		return
	}
	s := res[0].storage
	fmt.Printf("### Create from a pulled image (Debian %s unpacked) vs from host; data directory on %s (backend %s); %d of each, in turns\n",
		mib(res[0].bytes), s.Filesystem, orNone(s.Backend), o.n)
	fmt.Println("| template | warm pool | n | create p50 | create p95 | create → first exec p50 | create → first exec p95 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range res {
		for _, name := range templateNames {
			c, e := r.create[name], r.createExec[name]
			fmt.Printf("| %s | %d | %d | %s | %s | %s | %s |\n", name, r.pool, len(c), ms(pct(c, 50)), ms(pct(c, 95)), ms(pct(e, 50)), ms(pct(e, 95)))
		}
	}
	fmt.Println()
	fmt.Println("| warm pool | create p50, debian / host | create → first exec p50, debian / host | target ≤ 1.2× |")
	fmt.Println("|---|---|---|---|")
	for _, r := range res {
		c := float64(pct(r.create["debian"], 50)) / float64(pct(r.create["host"], 50))
		e := float64(pct(r.createExec["debian"], 50)) / float64(pct(r.createExec["host"], 50))
		met := "met"
		if c > 1.2 || e > 1.2 {
			met = "**not met**"
		}
		fmt.Printf("| %d | %.2f× | %.2f× | %s |\n", r.pool, c, e, met)
	}
	fmt.Println()
}

// printPulls prints hutch's pull against skopeo copy + umoci unpack.
func printPulls(r pullResult) {
	fmt.Printf("### Pull and unpack the Debian image (%s unpacked) from a registry on loopback; both on %s\n", mib(r.bytes), r.storage.Filesystem)
	fmt.Println("| what | n | p50 | p95 |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, d []time.Duration) {
		fmt.Printf("| %s | %d | %s | %s |\n", name, len(d), ms(pct(d, 50)), ms(pct(d, 95)))
	}
	row("hutch: pull into a new template (fetch, verify, unpack)", r.hutch)
	row("skopeo copy docker:// → oci:", r.skopeo)
	row("umoci unpack", r.umoci)
	row("skopeo copy + umoci unpack", r.skopeoAndUmoci)
	h, f := pct(r.hutch, 50), pct(r.skopeoAndUmoci, 50)
	met := "met"
	if h > f {
		met = "**not met**"
	}
	fmt.Printf("\nhutch / (skopeo + umoci), p50: %s (target ≤ 1.0×: %s)\n\n", ratio(h, f), met)
}

// methodOf is how the server copied r's sandboxes, from its log.
func methodOf(r fsResult) string {
	var ms []string
	for _, sr := range r.sizes {
		if sr.method != "" && !slices.Contains(ms, sr.method) {
			ms = append(ms, sr.method)
		}
	}
	if len(ms) == 0 {
		return "not logged"
	}
	return strings.Join(ms, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// pct and ms are stat's, by their short names here.
var (
	pct = stat.Pct
	ms  = stat.MS
)

// wholeMS formats a duration the API gives in whole milliseconds.
func wholeMS(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// ratio formats a / b as "4.20×".
func ratio(a, b time.Duration) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
