package api

import "time"

// SandboxMetrics is the answer of GET /v1/sandboxes/{id}/metrics: what a
// running or paused sandbox's commands use now (its agent's own use is left
// out), and a short history of samples (oldest first) taken every
// SampleEveryS seconds while it runs. A figure the sandbox's driver cannot
// measure on this host ("cpu", "memory", "pids", "disk", "network") is zero
// and named in Unsupported.
type SandboxMetrics struct {
	SandboxID    string    `json:"sandbox_id"`
	At           time.Time `json:"at"`
	CPU          CPUStats  `json:"cpu"`
	Memory       MemStats  `json:"memory"`
	Pids         PidStats  `json:"pids"`
	Disk         DiskStats `json:"disk"`
	Network      NetStats  `json:"network"`
	SampleEveryS int       `json:"sample_every_s"`
	History      []Sample  `json:"history"`
	Unsupported  []string  `json:"unsupported,omitempty"`
}

// CPUStats: UsageNS is the CPU time the sandbox's commands used since it
// started; Percent is their use over the last seconds (100 is one whole
// core); LimitCPUs is the limit in cores, where the driver enforces one.
type CPUStats struct {
	UsageNS   uint64  `json:"usage_ns"`
	Percent   float64 `json:"percent"`
	LimitCPUs float64 `json:"limit_cpus,omitempty"`
}

// MemStats are bytes: in use now (as the kernel counts it against the
// limit, page cache included), the most used so far where the kernel tells,
// and the limit (0: none); and the processes the out-of-memory killer
// killed.
type MemStats struct {
	UsageBytes int64  `json:"usage_bytes"`
	PeakBytes  int64  `json:"peak_bytes,omitempty"`
	LimitBytes int64  `json:"limit_bytes,omitempty"`
	OOMKills   uint64 `json:"oom_kills"`
}

// PidStats counts the sandbox's tasks (processes and threads) and their
// limit.
type PidStats struct {
	Current int `json:"current"`
	Limit   int `json:"limit,omitempty"`
}

// DiskStats are the bytes the sandbox's own files take and their cap.
type DiskStats struct {
	UsageBytes int64 `json:"usage_bytes"`
	LimitBytes int64 `json:"limit_bytes,omitempty"`
}

// NetStats count the bytes and packets that crossed the sandbox's network
// interfaces. A namespace sandbox has only lo, so every byte its sockets
// exchange counts both ways: what it sends through the egress proxy, what
// previews send it, what its processes send each other.
type NetStats struct {
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
}

// Sample is one point of a sandbox's history.
type Sample struct {
	At          time.Time `json:"at"`
	CPUPercent  float64   `json:"cpu_percent"`
	MemoryBytes int64     `json:"memory_bytes"`
	Pids        int       `json:"pids"`
	RxBytes     uint64    `json:"rx_bytes"`
	TxBytes     uint64    `json:"tx_bytes"`
}
