package confine

import "errors"

// Names that Report.Missing may hold: what was asked for (Apply) or what
// exists on other kernels (Probe) but this kernel cannot do.
const (
	// MissingLandlock: the kernel has no Landlock, or it is disabled at boot.
	MissingLandlock = "landlock"
	// MissingLandlockTCP: Landlock is older than ABI 4 and cannot
	// restrict TCP bind and connect.
	MissingLandlockTCP = "landlock_tcp"
	// MissingLandlockScope: Landlock is older than ABI 6, or lacks the fix
	// that lets threads of one process signal each other (erratum 2), so
	// abstract unix sockets and signals are not scoped.
	MissingLandlockScope = "landlock_scope"
	// MissingLandlockTSync: Landlock is older than ABI 8 and cannot put
	// every thread in one domain. Each OS thread is restricted on its own and
	// gets its own (identical) domain; processes started from different
	// threads then live in sibling domains, which cannot signal or ptrace
	// each other (kill, /proc/<pid>/environ, …) when scoping applies.
	MissingLandlockTSync = "landlock_tsync"
	// MissingSeccomp: no seccomp filter support, or no syscall table for
	// this architecture.
	MissingSeccomp = "seccomp"
)

// Apply confines the calling process, every thread of it, and everything it
// starts afterwards. It cannot be undone.
//
// In order it sets the rlimits, makes the process non-dumpable (so sandboxed
// processes of the same uid cannot read its memory or /proc entries), sets
// no_new_privs on every thread, enforces Landlock and installs the seccomp
// filter on every thread. The config is validated, the Landlock ruleset
// filled and the filter assembled before the first of these steps, so most
// errors leave the process untouched; an error from a later step leaves it
// partly confined, and the caller must treat any error as fatal.
//
// Kernels without Landlock (unless Landlock.Required) or seccomp, and
// Landlock features the kernel's ABI lacks, do not fail Apply: they are
// listed in Report.Missing.
//
// The binary must not link cgo: Go can run a system call on every thread only
// without it (syscall.AllThreadsSyscall).
func Apply(c *Config) (Report, error) {
	if c == nil {
		return Report{}, errors.New("confine: nil config")
	}
	if err := c.Validate(); err != nil {
		return Report{}, err
	}
	return apply(c)
}

// Probe reports what this kernel offers without confining anything: the
// Landlock ABI (0 without Landlock), whether a seccomp filter can be
// installed, and the Missing names for whatever Apply could not do here.
func Probe() Report {
	return probe()
}
