// Package nsinit is what hutch-agent does as pid 1 of a new sandbox, in
// the fresh user, mount, pid, net, ipc and uts namespaces the namespace
// driver started it in, before it serves: it builds the sandbox's root
// filesystem (an overlay over the template, read-only binds of the host's
// system directories, a fresh /proc with its sensitive entries masked, a
// minimal /dev, a tmpfs /tmp), lets the caller listen on its socket while
// the host's paths are still in view, moves the thread that forks commands
// into the sandbox's cgroup and gives it a cgroup namespace rooted there,
// pivots into the new root, and sets the hostname and brings up lo.
//
// It links only the standard library and golang.org/x/sys, because
// hutch-agent does.
package nsinit

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Config is the namespace part of the agent's bootstrap envelope.
type Config struct {
	// The agent starts in the sandbox's directory on the host: its driver
	// hands it that directory as its working directory, opened before the
	// agent entered its user namespace, whose ids may not look up the
	// directories above (a home that is 0700, say), and need not. Lower,
	// Upper, Work, Rootfs and the envelope's socket are relative to it,
	// so /proc/mounts inside the sandbox names no host path. Lower, the
	// template, may climb out of it ("../.templates/…"), into the
	// driver's directory and no higher.
	Lower string `json:"lower,omitempty"`
	// Lowers, when set, are the overlay's lower layers instead of Lower,
	// topmost first (an image's layers under hutch's own small layer),
	// each as Lower is: relative, up into the data directory at most.
	Lowers []string `json:"lowers,omitempty"`
	Upper  string   `json:"upper"`
	Work   string   `json:"work"`
	Rootfs string   `json:"rootfs"` // the overlay's mount point, relative to Dir
	// ReadOnly are host directories bound read-only, nosuid and nodev at
	// the same path inside the sandbox (/usr and the like).
	ReadOnly []string `json:"read_only,omitempty"`
	// Binds are volumes: directories of the host bound into the root.
	Binds []Bind `json:"binds,omitempty"`
	// Sealed are directories inside the root bound read-only over
	// themselves (where the agent binary is), so not even root inside can
	// change them.
	Sealed   []string `json:"sealed,omitempty"`
	Hostname string   `json:"hostname"`
	// TTYGID is the group of /dev/pts's terminals, as the sandbox numbers
	// it.
	TTYGID uint32 `json:"tty_gid"`
	// TmpBytes sizes /tmp and /dev/shm (tmpfs, charged to the sandbox's
	// memory limit as they fill).
	TmpBytes int64 `json:"tmp_bytes"`
	// DirFD is a descriptor (O_PATH) of the sandbox's directory that the
	// host opened before the agent's mount namespace was copied from its
	// own. The socket and the egress socket's directory are reached
	// through it (Path), so what the agent keeps of them refers to the
	// host's own mount. Through the working directory it would refer to
	// the namespace's copy of the host's mounts, which a user namespace
	// locks to their parents: the detach after the pivot could then free
	// none of them, and every filesystem mounted on the host when the
	// sandbox started would stay alive (a disk the operator unmounts
	// still busy, its loop device attached) for as long as the sandbox
	// runs. The agent closes it before the pivot. 0: none (paths go
	// through the working directory).
	DirFD int `json:"dir_fd,omitempty"`
	// Egress, relative to Dir, is the Unix socket of the control plane's
	// egress proxy for this sandbox (empty: none). The agent keeps its
	// directory open across the pivot and dials it through that.
	Egress string `json:"egress,omitempty"`
	// EgressPass: the control plane on Egress takes each connection to
	// the sandbox's proxy as the socket itself (agentproto.EgressPassed)
	// rather than its bytes; set only for an agent that reports
	// agentproto.FeatureEgressFD. A control plane that does not set it
	// gets bytes.
	EgressPass bool `json:"egress_pass,omitempty"`
	// UserLimits are limits of the sandbox's user namespace, by their
	// name under /proc/sys/user (max_inotify_instances…). The kernel also
	// charges what a sandbox uses to its namespace's owner on the host, so
	// without them one sandbox could take a host-wide budget whole.
	UserLimits map[string]int64 `json:"user_limits,omitempty"`
	// Cgroup says how commands join the sandbox's cgroup; nil leaves them
	// in the agent's (in a cgroup namespace of their own all the same).
	Cgroup *CgroupJoin `json:"cgroup,omitempty"`
}

// Bind is a volume bound into the sandbox's root: Source, relative to the
// sandbox's directory as Lower is, at Target, an absolute path inside.
type Bind struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Validate checks what Setup relies on.
func (c *Config) Validate() error {
	var errs []error
	for name, p := range map[string]string{"upper": c.Upper, "work": c.Work, "rootfs": c.Rootfs} {
		if !layerPath(p) || strings.HasPrefix(p, "..") {
			errs = append(errs, fmt.Errorf("nsinit: %s %q must be a clean relative path without , : or \\", name, p))
		}
	}
	if (c.Lower == "") == (len(c.Lowers) == 0) {
		errs = append(errs, errors.New("nsinit: exactly one of lower and lowers must be set"))
	}
	for _, p := range append([]string{c.Lower}, c.Lowers...) {
		// Up out of the sandbox's directory (to the driver's templates or
		// the layer store), then down only.
		if p != "" && !hostPath(p) {
			errs = append(errs, fmt.Errorf("nsinit: lower %q must be a clean relative path without , : or \\, climbing only at its start", p))
		}
	}
	for _, p := range c.ReadOnly {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			errs = append(errs, fmt.Errorf("nsinit: read-only bind %q is not a clean absolute path below /", p))
		}
	}
	if c.DirFD < 0 || c.DirFD > 0 && c.DirFD <= 2 {
		errs = append(errs, fmt.Errorf("nsinit: dir_fd %d must be 0 (none) or above 2", c.DirFD))
	}
	if c.Egress != "" && (path.IsAbs(c.Egress) || path.Clean(c.Egress) != c.Egress || strings.HasPrefix(c.Egress, "..")) {
		errs = append(errs, fmt.Errorf("nsinit: egress %q must be a clean relative path", c.Egress))
	}
	for _, b := range c.Binds {
		if !hostPath(b.Source) {
			errs = append(errs, fmt.Errorf("nsinit: bind source %q must be a clean relative path, climbing only at its start", b.Source))
		}
		if !path.IsAbs(b.Target) || path.Clean(b.Target) != b.Target || b.Target == "/" {
			errs = append(errs, fmt.Errorf("nsinit: bind target %q is not a clean absolute path below /", b.Target))
		}
	}
	for _, p := range c.Sealed {
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			errs = append(errs, fmt.Errorf("nsinit: sealed path %q is not a clean absolute path below /", p))
		}
	}
	if len(c.Hostname) == 0 || len(c.Hostname) > 64 || strings.ContainsAny(c.Hostname, "/\x00 ") {
		errs = append(errs, fmt.Errorf("nsinit: hostname %q must be 1 to 64 characters without /, space or NUL", c.Hostname))
	}
	for name, v := range c.UserLimits {
		if name == "" || strings.ContainsAny(name, "/.\x00") || v < 0 {
			errs = append(errs, fmt.Errorf("nsinit: user limit %q = %d is not a name under /proc/sys/user with a value of 0 or more", name, v))
		}
	}
	if c.TmpBytes <= 0 {
		errs = append(errs, errors.New("nsinit: tmp_bytes must be positive"))
	}
	return errors.Join(errs...)
}

// layerPath reports whether p can be named in overlayfs's options: clean,
// relative, without the separators , and : or an escape.
func layerPath(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && !strings.ContainsAny(p, ",:\\")
}

// hostPath reports whether p is a layerPath that climbs out of the
// sandbox's directory only at its start (to the driver's templates, the
// layer store, the volumes), then goes down only.
func hostPath(p string) bool {
	rest := p
	for strings.HasPrefix(rest, "../") {
		rest = rest[3:]
	}
	return layerPath(p) && !strings.HasPrefix(rest, "..")
}

// lowerdir is the overlay's lowerdir option.
func (c *Config) lowerdir() string {
	if len(c.Lowers) > 0 {
		return strings.Join(c.Lowers, ":")
	}
	return c.Lower
}

// Path is rel, a path relative to the sandbox's directory, reached through
// DirFD when there is one.
func (c *Config) Path(rel string) string {
	if c.DirFD == 0 {
		return rel
	}
	return "/proc/self/fd/" + strconv.Itoa(c.DirFD) + "/" + rel
}
