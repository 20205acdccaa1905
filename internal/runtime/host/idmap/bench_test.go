package idmap_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkAttach10 measures what the namespace driver adds to a sandbox's
// start for an image of 10 layers: open the sandbox's user namespace,
// id-map 10 layer directories and attach them in its mount namespace.
// Each run gets a fresh sandbox (not timed). It reports the median; run
// with -benchtime=50x for the median of 50.
func BenchmarkAttach10(b *testing.B) {
	requireRoot(b)
	base := b.TempDir()
	var layers, targets []string
	for i := range 10 {
		layers = append(layers, filepath.Join(base, fmt.Sprintf("layer%d", i)))
		makeLayer(b, layers[i])
		targets = append(targets, filepath.Join(base, fmt.Sprintf("lower%d", i)))
	}
	mkdirs(b, 0, targets...)
	runs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		sb := startSandbox(b, "cat")
		b.StartTimer()
		start := time.Now()
		err := mountAndAttach(sb.cmd.Process.Pid, layers, targets)
		runs = append(runs, time.Since(start))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		sb.stdin.Close()
		sb.cmd.Process.Kill()
		sb.cmd.Wait()
	}
	slices.Sort(runs)
	b.ReportMetric(float64(runs[len(runs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(runs[len(runs)-1].Microseconds()), "max-µs")
}
