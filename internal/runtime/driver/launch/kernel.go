package launch

import "github.com/hutchdev/hutch/internal/agent/confine"

// KernelGaps are the degraded-isolation notes for what the kernel cannot
// do of the agent's confinement. Landlock without TSYNC is not one: each
// agent thread then gets its own domain, and the agent forks and signals
// from one thread, so nothing is lost.
func KernelGaps(r confine.Report) []string {
	var out []string
	for _, m := range r.Missing {
		if m != confine.MissingLandlockTSync {
			out = append(out, "kernel lacks "+m)
		}
	}
	return out
}
