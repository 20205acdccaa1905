package cgroups

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
)

// cpuPeriod is the CFS period, in microseconds, that CPU quotas are
// expressed against: 100 ms, the kernel's default.
const cpuPeriod = 100000

// minCPU is the smallest CPU limit: the kernel refuses a quota under 1 ms.
const minCPU = 0.01

// SetLimits changes the sandbox's limits: box gets l exactly, <id> gets l
// plus the agent's overhead. Limits of controllers the host lacks are
// skipped. Lowering memory below what the group uses fails on v1 (EBUSY)
// and makes the kernel reclaim or kill on v2.
func (g *Group) SetLimits(l Limits) error {
	if err := l.validate(); err != nil {
		return err
	}
	if g.m.version == 2 {
		return g.setLimitsV2(l)
	}
	return g.setLimitsV1(l)
}

// validate rejects limits no kernel takes: negative ones, a CPU limit that
// is not a finite number of at least minCPU, and sizes that overflow once
// the agent's overhead is added.
func (l Limits) validate() error {
	switch {
	case l.MemoryBytes < 0 || l.Pids < 0:
		return fmt.Errorf("%w: negative limit %+v", ErrInvalid, l)
	case l.MemoryBytes > math.MaxInt64-AgentMemoryOverhead || l.Pids > math.MaxInt64-AgentPidsOverhead:
		return fmt.Errorf("%w: limit too large %+v", ErrInvalid, l)
	case math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) || l.CPU < 0:
		return fmt.Errorf("%w: cpu limit %v is not a positive number", ErrInvalid, l.CPU)
	case l.CPU != 0 && l.CPU < minCPU:
		return fmt.Errorf("%w: cpu limit %v is below %v cores", ErrInvalid, l.CPU, minCPU)
	case cpuQuota(l.CPU) < 0:
		return fmt.Errorf("%w: cpu limit %v too large", ErrInvalid, l.CPU)
	}
	return nil
}

// withOverhead returns the limits of <id>: l plus what the agent needs,
// keeping "no limit" as it is. CPU is not raised: <id> has no CPU limit.
func (l Limits) withOverhead() Limits {
	out := Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids}
	if out.MemoryBytes > 0 {
		out.MemoryBytes += AgentMemoryOverhead
	}
	if out.Pids > 0 {
		out.Pids += AgentPidsOverhead
	}
	return out
}

// cpuQuota turns cores into microseconds per cpuPeriod.
func cpuQuota(cores float64) int64 {
	q := math.Round(cores * cpuPeriod)
	if q >= math.MaxInt64 {
		return -1
	}
	return int64(q)
}

// setPids writes pids.max (v1 and v2 alike): n, or "max" for 0.
func setPids(dir string, n int64) error {
	value := "max"
	if n > 0 {
		value = strconv.FormatInt(n, 10)
	}
	return writeFile(filepath.Join(dir, "pids.max"), value)
}
