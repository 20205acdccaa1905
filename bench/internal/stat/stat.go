// Package stat is the benchmarks' arithmetic: percentiles of timings, how
// they are printed, and the CPU time this process has used.
package stat

import (
	"fmt"
	"slices"
	"time"
)

// Pct is the p-th percentile of d (nearest rank below), 0 for none.
func Pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// MS prints d in milliseconds to the microsecond.
func MS(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
