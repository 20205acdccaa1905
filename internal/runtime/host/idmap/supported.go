package idmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The trial's user namespace maps ids 0..probeSize-1 to host ids from
// probeBase. Any host range serves: the namespace outlives the trial only
// as long as its descriptor, and nothing on disk is ever owned through it.
const (
	probeBase = 2_000_000_000
	probeSize = 65536
	probeID   = 1000 // owner of the trial's file, as stored on disk
)

// Supported reports whether this host can id-map mounts of directories on
// the filesystem holding dir and stack an overlay on them, by doing it: it
// makes a throwaway user namespace, id-maps a directory it makes in dir
// (and removes), checks through the mount that a file stored as uid and
// gid 1000 shows as the mapped host ids, and builds (without attaching) an
// overlay whose lower layer is that mount. The error says why not. It
// caches nothing; the caller does.
func Supported(dir string) error {
	if err := canMount(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".hutch-idmap-trial-")
	if err != nil {
		return fmt.Errorf("make a trial directory in %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	lower := filepath.Join(tmp, "lower")
	if err := os.Mkdir(lower, 0o755); err != nil {
		return err
	}
	probe := filepath.Join(lower, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return err
	}
	if err := os.Lchown(probe, probeID, probeID); err != nil {
		return err
	}
	userns, err := throwawayUserns(probeBase, probeSize)
	if err != nil {
		return err
	}
	defer unix.Close(userns)
	fd, err := Mount(lower, userns)
	if err != nil {
		return explainMount(dir, err)
	}
	defer unix.Close(fd)
	if err := checkOwner(fd, "through the id-mapped mount"); err != nil {
		return err
	}
	return tryOverlay(tmp, fd)
}

// canMount says whether this process holds CAP_SYS_ADMIN at all.
func canMount() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read this process's capabilities: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0 {
		return nil
	}
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("not root (uid %d): id-mapped mounts need CAP_SYS_ADMIN", uid)
	}
	return errors.New("no CAP_SYS_ADMIN: id-mapped mounts need it")
}

// throwawayUserns returns a descriptor of a new user namespace mapping
// uids and gids 0..size-1 to host ids from base. A user namespace needs a
// process to be made in, so one is started and ended here. As in runc's
// userns.spawnProc, it is traced from its start (PTRACE_TRACEME), which
// stops it at its execve before the program runs a single instruction:
// the program is therefore this executable, which surely exists, and
// never runs. Should hutch die meanwhile, Pdeathsig ends the process; it
// fires when the thread that started it ends, so that thread stays locked
// to this goroutine until the process is reaped.
func throwawayUserns(base, size int) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: size}}
	p, err := os.StartProcess("/proc/self/exe", []string{"hutch-idmap-userns"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: ids,
			GidMappings: ids,
			Ptrace:      true,
			Pdeathsig:   syscall.SIGKILL,
		},
	})
	if err != nil {
		return -1, fmt.Errorf("start a process in a new user namespace: %w", err)
	}
	defer func() {
		p.Kill()
		p.Wait()
	}()
	return UsernsFD(p.Pid)
}

// explainMount turns Mount's failure in the trial into the reason.
func explainMount(dir string, err error) error {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("this kernel has no id-mapped mounts (they need Linux 5.12): %w", err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("the %s filesystem holding %s does not support id-mapped mounts: %w", fsType(dir), dir, err)
	case errors.Is(err, unix.EPERM):
		if !initialUserns() {
			return fmt.Errorf("hutch runs in a user namespace of its own (a container?): id-mapped mounts need CAP_SYS_ADMIN in the initial one: %w", err)
		}
		return fmt.Errorf("the kernel refused to id-map a mount on the %s filesystem holding %s: %w", fsType(dir), dir, err)
	}
	return err
}

// checkOwner checks that the trial's file, below the directory fd, shows
// the owner it is stored with as mapped by the trial's namespace.
func checkOwner(fd int, where string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "probe", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat the trial file %s: %w", where, err)
	}
	if want := uint32(probeBase + probeID); st.Uid != want || st.Gid != want {
		return fmt.Errorf("a file stored as %d:%d shows as %d:%d %s, not %d:%d", probeID, probeID, st.Uid, st.Gid, where, want, want)
	}
	return nil
}

// tryOverlay builds an overlay whose lower layer is the id-mapped mount
// lowerFD, with its upper and work directories in dir, and checks the
// trial file's owner through it. The overlay is never attached: it is
// dropped with its descriptor.
func tryOverlay(dir string, lowerFD int) error {
	fd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	switch {
	case errors.Is(err, unix.ENODEV):
		return errors.New("this kernel has no overlay filesystem")
	case err != nil:
		return fmt.Errorf("fsopen overlay: %w", err)
	}
	defer unix.Close(fd)
	opts := [][2]string{
		// The detached mount has no path but this one.
		{"lowerdir", fmt.Sprintf("/proc/self/fd/%d", lowerFD)},
		{"upperdir", filepath.Join(dir, "upper")},
		{"workdir", filepath.Join(dir, "work")},
	}
	for _, o := range opts[1:] {
		if err := os.Mkdir(o[1], 0o755); err != nil {
			return err
		}
	}
	for _, o := range opts {
		if err := unix.FsconfigSetString(fd, o[0], o[1]); err != nil {
			return fmt.Errorf("overlay option %s: %w%s", o[0], err, fsLog(fd))
		}
	}
	if err := unix.FsconfigCreate(fd); err != nil {
		return fmt.Errorf("overlayfs refuses an id-mapped lower layer (it takes them from Linux 5.19): %w%s", err, fsLog(fd))
	}
	mnt, err := unix.Fsmount(fd, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fsmount the trial overlay: %w%s", err, fsLog(fd))
	}
	defer unix.Close(mnt)
	return checkOwner(mnt, "through an overlay on the id-mapped mount")
}

// fsLog drains the messages the kernel left on a filesystem context, as
// ": msg; msg", or "" when there are none.
func fsLog(fd int) string {
	var msgs []string
	buf := make([]byte, 1024)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	if len(msgs) == 0 {
		return ""
	}
	return " (" + strings.Join(msgs, "; ") + ")"
}

// fsType names the filesystem holding dir, for an error.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	if name, ok := fsNames[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("0x%x", st.Type)
}

var fsNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlay",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
}

// initialUserns reports whether this process is in the initial user
// namespace, whose map is the identity over every id.
func initialUserns() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true
	}
	return strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
}
