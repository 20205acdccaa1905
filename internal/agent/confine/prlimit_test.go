package confine

import (
	"slices"
	"testing"
)

func TestPrlimitArgs(t *testing.T) {
	got := PrlimitArgs("/usr/bin/prlimit", []Rlimit{{Resource: "data", Cur: 64 << 20, Max: 64 << 20}, {Resource: "nproc", Cur: 10, Max: 20}})
	want := []string{"/usr/bin/prlimit", "--data=67108864:67108864", "--nproc=10:20", "--"}
	if !slices.Equal(got, want) {
		t.Fatalf("PrlimitArgs = %q, want %q", got, want)
	}
}
