package cgroups

import (
	"errors"
	"math"
	"testing"
)

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"none", Limits{}, true},
		{"all", Limits{MemoryBytes: 1 << 30, Pids: 100, CPU: 1.5}, true},
		{"smallest cpu", Limits{CPU: 0.01}, true},
		{"negative memory", Limits{MemoryBytes: -1}, false},
		{"negative pids", Limits{Pids: -1}, false},
		{"negative cpu", Limits{CPU: -0.5}, false},
		{"cpu under 1ms", Limits{CPU: 0.005}, false},
		{"nan cpu", Limits{CPU: math.NaN()}, false},
		{"infinite cpu", Limits{CPU: math.Inf(1)}, false},
		{"cpu overflows", Limits{CPU: 1e300}, false},
		{"memory overflows with overhead", Limits{MemoryBytes: math.MaxInt64 - 1}, false},
		{"pids overflow with overhead", Limits{Pids: math.MaxInt64}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.validate()
			if (err == nil) != tt.ok {
				t.Fatalf("validate(%+v) = %v, want ok=%v", tt.l, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("validate(%+v) = %v, want ErrInvalid", tt.l, err)
			}
		})
	}
}

func TestWithOverhead(t *testing.T) {
	tests := []struct {
		in, want Limits
	}{
		{Limits{}, Limits{}},
		{Limits{MemoryBytes: 1 << 20, Pids: 10, CPU: 2}, Limits{MemoryBytes: 1<<20 + AgentMemoryOverhead, Pids: 10 + AgentPidsOverhead}},
	}
	for _, tt := range tests {
		if got := tt.in.withOverhead(); got != tt.want {
			t.Errorf("%+v.withOverhead() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestCPUQuota(t *testing.T) {
	tests := []struct {
		cores float64
		want  int64
	}{
		{0.5, 50000},
		{0.01, 1000},
		{1, 100000},
		{2.333333, 233333},
		{0.1 + 0.2, 30000},
	}
	for _, tt := range tests {
		if got := cpuQuota(tt.cores); got != tt.want {
			t.Errorf("cpuQuota(%v) = %d, want %d", tt.cores, got, tt.want)
		}
	}
}
