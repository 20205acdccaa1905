package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock ABI facts (include/uapi/linux/landlock.h, landlock(7)).
const (
	// ruleNetPort is LANDLOCK_RULE_NET_PORT (ABI 4), absent from x/sys.
	ruleNetPort = 2
	// erratumScopedSignal is erratum 2 in the LANDLOCK_CREATE_RULESET_ERRATA
	// bitmask (bit N-1 for erratum N): without it, scoped signals between
	// threads of one process in different domains are denied, which breaks
	// the Go runtime's own signals when each thread has its own domain.
	erratumScopedSignal = 1 << (2 - 1)

	// fsRightsV1 are the file system rights of ABI 1; later ABIs add
	// REFER (2), TRUNCATE (3), IOCTL_DEV (5) and RESOLVE_UNIX (9).
	fsRightsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// fileRights are the only rights a rule on a non-directory may carry
	// (the kernel's ACCESS_FILE); any other right makes it EINVAL.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV |
		unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX

	// readRights is what a ReadOnly path gets.
	readRights = unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_EXECUTE

	netRights = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP

	scopeRights = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
)

// fsRights returns every file system right the given ABI knows, so the
// ruleset handles (denies by default) all of them.
func fsRights(abi int) uint64 {
	r := uint64(fsRightsV1)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		r |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return r
}

// rulesetAttr is struct landlock_ruleset_attr as far as hutch uses it; ABI
// 10 appends quiet_* fields, which rulesetAttrSize leaves out.
type rulesetAttr struct {
	handledFS  uint64 // ABI 1
	handledNet uint64 // ABI 4
	scoped     uint64 // ABI 6
}

// rulesetAttrSize is the size of the part of rulesetAttr the ABI knows; the
// kernel refuses a larger struct with a non-zero tail.
func rulesetAttrSize(abi int) uintptr {
	switch {
	case abi < 4:
		return 8
	case abi < 6:
		return 16
	default:
		return 24
	}
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock
// (ENOSYS: not built; EOPNOTSUPP: disabled at boot).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// landlockErrata is the bitmask of fixed errata; 0 on kernels that predate
// the query.
func landlockErrata() uint64 {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
	if errno != 0 {
		return 0
	}
	return uint64(v)
}

// scopeUsable says whether scoping can be enforced on a Go process: ABI 6,
// and the fix that lets its threads keep signalling each other.
func scopeUsable(abi int) bool {
	return abi >= 6 && landlockErrata()&erratumScopedSignal != 0
}

// landlockMissing lists what Landlock at abi cannot do of what is wanted.
func landlockMissing(abi int, tcp, scope bool) []string {
	if abi < 1 {
		return []string{MissingLandlock}
	}
	var missing []string
	if tcp && abi < 4 {
		missing = append(missing, MissingLandlockTCP)
	}
	if scope && !scopeUsable(abi) {
		missing = append(missing, MissingLandlockScope)
	}
	if abi < 8 {
		missing = append(missing, MissingLandlockTSync)
	}
	return missing
}

// landlockPlan is a filled ruleset waiting to be enforced.
type landlockPlan struct {
	fd    int
	abi   int
	tsync bool // enforce with LANDLOCK_RESTRICT_SELF_TSYNC instead of per thread
}

// prepareLandlock builds the ruleset for l. A nil plan with a nil error
// means the kernel has no Landlock and l does not require it.
func prepareLandlock(l *Landlock) (*landlockPlan, []string, error) {
	abi := landlockABI()
	if abi < 1 {
		if l.Required {
			return nil, nil, errors.New("confine: landlock is required but the kernel lacks it or has it disabled")
		}
		return nil, []string{MissingLandlock}, nil
	}
	missing := landlockMissing(abi, l.DenyTCP, l.Scope)

	attr := rulesetAttr{handledFS: fsRights(abi)}
	if l.DenyTCP && abi >= 4 {
		attr.handledNet = netRights
	}
	if l.Scope && scopeUsable(abi) {
		attr.scoped = scopeRights
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), rulesetAttrSize(abi), 0)
	if errno != 0 {
		return nil, nil, fmt.Errorf("confine: landlock_create_ruleset (ABI %d): %w", abi, errno)
	}
	plan := &landlockPlan{fd: int(fd), abi: abi, tsync: abi >= 8}

	add := func(paths []string, access uint64) error {
		for _, p := range paths {
			if err := addPathRule(plan.fd, p, access&attr.handledFS); err != nil {
				return err
			}
		}
		return nil
	}
	err := add(l.ReadOnly, readRights)
	if err == nil {
		err = add(l.ReadWrite, attr.handledFS)
	}
	if err == nil && attr.handledNet != 0 {
		for _, port := range l.ConnectPorts {
			if err = addPortRule(plan.fd, port); err != nil {
				break
			}
		}
	}
	if err != nil {
		plan.close()
		return nil, nil, err
	}
	return plan, missing, nil
}

// addPathRule allows access beneath path. A path that does not exist is
// skipped; a path that is not a directory gets only the file rights.
func addPathRule(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("confine: landlock path %q: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("confine: landlock path %q: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("confine: landlock rule for %q: %w", path, errno)
	}
	return nil
}

// addPortRule allows TCP connect to port.
func addPortRule(rulesetFD int, port uint16) error {
	attr := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD),
		ruleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("confine: landlock rule for TCP port %d: %w", port, errno)
	}
	return nil
}

// restrict enforces the ruleset on every thread. From ABI 8 one call with
// LANDLOCK_RESTRICT_SELF_TSYNC puts all threads in one domain; before, each
// thread is restricted by its own call and so gets its own domain.
func (p *landlockPlan) restrict() error {
	if p.tsync {
		_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(p.fd), unix.LANDLOCK_RESTRICT_SELF_TSYNC, 0)
		if errno != 0 {
			return fmt.Errorf("confine: landlock_restrict_self(TSYNC): %w", restrictHint(errno))
		}
		return nil
	}
	if err := allThreads(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(p.fd), 0, 0); err != nil {
		return fmt.Errorf("confine: landlock_restrict_self on every thread: %w", restrictHint(err))
	}
	return nil
}

func (p *landlockPlan) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// restrictHint explains the one error a caller can cause.
func restrictHint(err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (set no_new_privs or hold CAP_SYS_ADMIN)", err)
	}
	return err
}
