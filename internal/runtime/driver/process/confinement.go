package process

import (
	"path/filepath"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/confine"
)

// systemReadOnly are the host paths a sandbox may read and execute: the
// system directories and a minimal /etc, never the whole host /.
var systemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
	"/proc",
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf",
	"/etc/host.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/debian_version",
	"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/inputrc", "/etc/environment",
	"/etc/mime.types", "/etc/magic", "/etc/locale.alias", "/etc/terminfo",
}

// devices a sandbox may open for reading and writing (with /dev/ptmx and
// /dev/pts, terminals for background processes).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// confinement is what the agent applies to itself for one sandbox: TCP
// only to its egress proxy's port.
func (d *Driver) confinement(root string, limits api.Limits, perSandboxUID bool, egressPort uint16) *confine.Config {
	ro := append([]string{d.agentPath}, systemReadOnly...)
	rw := append([]string{root}, devices...)
	c := &confine.Config{
		NoNewPrivs:      true,
		Seccomp:         true,
		RestrictSockets: true,
		Landlock: &confine.Landlock{
			ReadOnly:     ro,
			ReadWrite:    rw,
			DenyTCP:      true,
			ConnectPorts: []uint16{egressPort},
			Scope:        true,
		},
		Rlimits: []confine.Rlimit{{Resource: "core", Cur: 0, Max: 0}},
	}
	if limits.Pids > 0 && perSandboxUID {
		// RLIMIT_NPROC counts the processes of the uid, which is the
		// sandbox's own: a per-sandbox pids limit.
		n := uint64(limits.Pids)
		c.Rlimits = append(c.Rlimits, confine.Rlimit{Resource: "nproc", Cur: n, Max: n})
	}
	return c
}

// commandRlimits are set on each command (not on the agent, whose Go
// runtime maps far more than it uses): the memory limit, per process.
func commandRlimits(limits api.Limits) []confine.Rlimit {
	if limits.MemoryMB <= 0 {
		return nil
	}
	b := uint64(limits.MemoryMB) << 20
	return []confine.Rlimit{{Resource: "data", Cur: b, Max: b}}
}

// baseEnv is the environment every process of the sandbox starts with;
// the caller's env is laid over it.
func baseEnv(id, root string, uid uint32) map[string]string {
	env := map[string]string{
		"HOME":             root,
		"TMPDIR":           filepath.Join(root, "tmp"),
		"PATH":             "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG":             "C.UTF-8",
		"HUTCH_SANDBOX_ID": id,
		"USER":             "sandbox",
	}
	if uid != 0 {
		env["USER"] = "sandbox-" + strconv.FormatUint(uint64(uid), 10)
	}
	return env
}
