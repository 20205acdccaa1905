package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// The subset of the OCI runtime spec (config.json) the runc floor needs,
// written here so the benchmark adds no dependency.
type (
	ociSpec struct {
		OCIVersion string     `json:"ociVersion"`
		Process    ociProcess `json:"process"`
		Root       ociRoot    `json:"root"`
		Hostname   string     `json:"hostname"`
		Mounts     []ociMount `json:"mounts"`
		Linux      ociLinux   `json:"linux"`
	}
	ociProcess struct {
		Terminal        bool        `json:"terminal"`
		User            ociUser     `json:"user"`
		Args            []string    `json:"args"`
		Env             []string    `json:"env"`
		Cwd             string      `json:"cwd"`
		Capabilities    ociCaps     `json:"capabilities"`
		Rlimits         []ociRlimit `json:"rlimits"`
		NoNewPrivileges bool        `json:"noNewPrivileges"`
	}
	ociUser struct {
		UID uint32 `json:"uid"`
		GID uint32 `json:"gid"`
	}
	ociCaps struct {
		Bounding  []string `json:"bounding"`
		Effective []string `json:"effective"`
		Permitted []string `json:"permitted"`
		Ambient   []string `json:"ambient"`
	}
	ociRlimit struct {
		Type string `json:"type"`
		Hard uint64 `json:"hard"`
		Soft uint64 `json:"soft"`
	}
	ociRoot struct {
		Path     string `json:"path"`
		Readonly bool   `json:"readonly"`
	}
	ociMount struct {
		Destination string   `json:"destination"`
		Type        string   `json:"type"`
		Source      string   `json:"source"`
		Options     []string `json:"options,omitempty"`
	}
	ociLinux struct {
		UIDMappings   []ociIDMap     `json:"uidMappings,omitempty"`
		GIDMappings   []ociIDMap     `json:"gidMappings,omitempty"`
		Namespaces    []ociNamespace `json:"namespaces"`
		Resources     ociResources   `json:"resources"`
		CgroupsPath   string         `json:"cgroupsPath"`
		MaskedPaths   []string       `json:"maskedPaths"`
		ReadonlyPaths []string       `json:"readonlyPaths"`
	}
	ociIDMap struct {
		ContainerID uint32 `json:"containerID"`
		HostID      uint32 `json:"hostID"`
		Size        uint32 `json:"size"`
	}
	ociNamespace struct {
		Type string `json:"type"`
	}
	ociResources struct {
		Devices []ociDevice `json:"devices"`
		Memory  ociMemory   `json:"memory"`
		Pids    ociPids     `json:"pids"`
	}
	ociDevice struct {
		Allow  bool   `json:"allow"`
		Access string `json:"access"`
	}
	ociMemory struct {
		Limit int64 `json:"limit"`
	}
	ociPids struct {
		Limit int64 `json:"limit"`
	}
)

// Ids the runc floor maps the container's root to when it runs with a user
// namespace: an unprivileged host range, as hutch maps a sandbox's root.
const (
	runcHostID = 100000
	runcIDs    = 65536
)

// runcSpec is a bundle comparable to a sandbox: pid, network, ipc, uts,
// mount and cgroup namespaces (and user, with root mapped to runcHostID),
// a read-only root holding only read-only binds of /usr, a fresh /proc, a
// minimal /dev, a tmpfs /tmp, and memory and pids limits like hutch's
// defaults (512 MiB, 256). The process runs /bin/true. Masked and
// read-only /proc paths are those `runc spec` writes.
func runcSpec(userns bool, cgroup string) ociSpec {
	caps := []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}
	s := ociSpec{
		OCIVersion: "1.0.2",
		Process: ociProcess{
			Args:            []string{"/bin/true"},
			Env:             []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cwd:             "/",
			Capabilities:    ociCaps{Bounding: caps, Effective: caps, Permitted: caps, Ambient: caps},
			Rlimits:         []ociRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: "rootfs", Readonly: true},
		Hostname: "bench",
		Mounts: []ociMount{
			{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro", "nosuid", "nodev"}},
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		},
		Linux: ociLinux{
			Namespaces: []ociNamespace{{"pid"}, {"network"}, {"ipc"}, {"uts"}, {"mount"}, {"cgroup"}},
			Resources: ociResources{
				Devices: []ociDevice{{Allow: false, Access: "rwm"}},
				Memory:  ociMemory{Limit: 512 << 20},
				Pids:    ociPids{Limit: 256},
			},
			CgroupsPath: cgroup,
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	if userns {
		s.Linux.Namespaces = append(s.Linux.Namespaces, ociNamespace{"user"})
		m := []ociIDMap{{ContainerID: 0, HostID: runcHostID, Size: runcIDs}}
		s.Linux.UIDMappings, s.Linux.GIDMappings = m, m
	}
	return s
}

// writeBundle makes an OCI bundle in dir: rootfs/ with the merged-/usr
// symlinks of Debian 12 (bin, lib, lib64, sbin → usr/…) and the mount
// points, and config.json from spec. Everything is world-readable so the
// container's mapped root can reach it.
func writeBundle(dir string, spec ociSpec) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []string{"", "usr", "proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(rootfs, l)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	b, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
}
