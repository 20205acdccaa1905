// Package confine applies the in-process confinement a sandbox's agent puts
// on itself (and so on every process it starts) before it serves: rlimits,
// no_new_privs, a non-dumpable agent, Landlock and a seccomp filter. It links
// only the standard library and golang.org/x/sys, because hutch-agent does.
package confine

// Config is what to apply. It travels inside the bootstrap envelope, so it
// is plain JSON. A nil section applies nothing of that kind.
type Config struct {
	NoNewPrivs bool      `json:"no_new_privs"`
	Landlock   *Landlock `json:"landlock,omitempty"`
	Seccomp    bool      `json:"seccomp"`
	// RestrictSockets lets the seccomp filter allow only AF_UNIX sockets and
	// TCP over AF_INET/AF_INET6 (which Landlock then governs): no UDP, raw,
	// netlink or packet sockets.
	RestrictSockets bool     `json:"restrict_sockets"`
	Rlimits         []Rlimit `json:"rlimits,omitempty"`
}

// Landlock lists the file hierarchies a sandbox may use; everything else is
// denied. Paths that do not exist are skipped.
type Landlock struct {
	ReadOnly  []string `json:"read_only,omitempty"`  // read and execute
	ReadWrite []string `json:"read_write,omitempty"` // every file right
	// DenyTCP denies TCP bind and connect (ABI 4+) except to the listed
	// ports on connect.
	DenyTCP      bool     `json:"deny_tcp"`
	ConnectPorts []uint16 `json:"connect_ports,omitempty"`
	// Scope denies abstract unix sockets and signals to processes outside
	// the sandbox's Landlock domain (ABI 6+).
	Scope bool `json:"scope"`
	// Required turns a kernel without Landlock into an error instead of a
	// degraded report.
	Required bool `json:"required"`
}

// Rlimit is one resource limit; Resource is a name such as "nproc", "as",
// "data", "nofile", "fsize", "core", "cpu".
type Rlimit struct {
	Resource string `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Report says what was applied and what the kernel could not do.
type Report struct {
	LandlockABI int      `json:"landlock_abi"`
	Seccomp     bool     `json:"seccomp"`
	Missing     []string `json:"missing,omitempty"`
}
