package storage

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil"
)

// The tests below make each filesystem for real (a loop-mounted image, a
// tmpfs, an overlay), run Probe on it, and then check every claim Probe
// made against what the kernel does when asked directly: a reflink with
// cp, an overlay mount, a subvolume snapshot with the btrfs tool, a write
// past a quota limit. They need root; CI runs them as root with Debian's
// btrfs-progs and xfsprogs.

// probeIn runs Probe on <root>/data with <root>/data/tmp as its scratch,
// as hutch does, and checks it left nothing in the scratch directory.
func probeIn(t *testing.T, root string) Info {
	t.Helper()
	data := filepath.Join(root, "data")
	scratch := filepath.Join(data, "tmp")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	info, err := Probe(data, scratch)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	t.Logf("Probe(%s) = %s\n%+v", data, info, plain(info))
	left, err := os.ReadDir(scratch)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("Probe left %d entries in its scratch directory, %s first", len(left), left[0].Name())
	}
	return info
}

// confirm holds each claim of info against the kernel, in a directory of
// root's that Probe did not use.
func confirm(t *testing.T, root string, info Info) {
	t.Helper()
	dir := filepath.Join(root, "confirm")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if got := reflinkWorks(t, dir); got != info.Reflink {
		t.Errorf("Probe says reflink %v; cp --reflink=always says %v", info.Reflink, got)
	}
	if got := overlayWorks(t, dir); got != info.Overlay {
		t.Errorf("Probe says overlay %v; mount -t overlay says %v", info.Overlay, got)
	}
	if got := subvolumeSnapshotWorks(t, dir); got != (info.Snapshot == SnapshotSubvolume) {
		t.Errorf("Probe says snapshot %q; btrfs subvolume snapshot works: %v", info.Snapshot, got)
	}
	if info.Snapshot == SnapshotReflink && !info.Reflink {
		t.Errorf("snapshot by reflink without reflink")
	}
	if info.Kind == None && info.Degraded == "" {
		t.Error("no backend, yet not degraded")
	}
	if (info.Degraded == "") != (info.Quota.Enabled && info.Snapshot != SnapshotCopy && info.Kind != None) {
		t.Errorf("degraded %q does not match quota %+v, snapshot %q", info.Degraded, info.Quota, info.Snapshot)
	}
}

func reflinkWorks(t *testing.T, dir string) bool {
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte(strings.Repeat("x", 1<<16)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cp", "--reflink=always", src, filepath.Join(dir, "dst")).CombinedOutput()
	t.Logf("cp --reflink=always: %v %s", err, out)
	return err == nil
}

func overlayWorks(t *testing.T, dir string) bool {
	o := filepath.Join(dir, "overlay")
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(o, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + o + "/lower,upperdir=" + o + "/upper,workdir=" + o + "/work"
	merged := filepath.Join(o, "merged")
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Logf("mount -t overlay: %v", err)
		return false
	}
	if err := os.WriteFile(filepath.Join(merged, "f"), []byte("up"), 0o600); err != nil {
		t.Errorf("write through the overlay: %v", err)
	}
	unmount(t, merged)
	return true
}

// unmount unmounts dir, retrying while it is busy: a parallel test's
// fork holds a copy of every descriptor open at that moment (close-on-exec
// ones included) until it execs.
func unmount(t *testing.T, dir string) {
	t.Helper()
	var err error
	for range 100 {
		if err = unix.Unmount(dir, 0); !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("unmount %s: %v", dir, err)
	}
}

func subvolumeSnapshotWorks(t *testing.T, dir string) bool {
	if _, err := exec.LookPath("btrfs"); err != nil {
		return false // only btrfs has subvolumes; NewLoopFS skipped if it was wanted
	}
	sv, snap := filepath.Join(dir, "sv"), filepath.Join(dir, "snap")
	if out, err := exec.Command("btrfs", "subvolume", "create", sv).CombinedOutput(); err != nil {
		t.Logf("btrfs subvolume create: %v %s", err, out)
		return false
	}
	defer exec.Command("btrfs", "subvolume", "delete", sv).Run()
	if err := os.WriteFile(filepath.Join(sv, "f"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("btrfs", "subvolume", "snapshot", sv, snap).CombinedOutput(); err != nil {
		t.Logf("btrfs subvolume snapshot: %v %s", err, out)
		return false
	}
	defer exec.Command("btrfs", "subvolume", "delete", snap).Run()
	b, err := os.ReadFile(filepath.Join(snap, "f"))
	return err == nil && string(b) == "kept"
}

// plain is Info without its String method, for %+v.
type plain Info

// run runs a command the test needs and fails it when the command fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// fill writes to path in MiB chunks until a write fails or max bytes are
// written, and returns how much it wrote and the error.
func fill(t *testing.T, path string, max int64) (int64, error) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := []byte(strings.Repeat("q", 1<<20))
	var n int64
	for n < max {
		w, err := f.Write(chunk)
		n += int64(w)
		if err != nil {
			return n, err
		}
	}
	return n, f.Sync()
}

func TestProbeBtrfs(t *testing.T) {
	t.Parallel()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "btrfs"})
	info := probeIn(t, fs.Dir)
	if info.Filesystem != "btrfs" || info.Kind != Btrfs || info.Snapshot != SnapshotSubvolume || !info.Reflink || !info.Overlay {
		t.Errorf("btrfs: got %+v", plain(info))
	}
	if info.Quota.Mechanism != QuotaQgroup || info.Quota.Enabled || !strings.Contains(info.Quota.Hint, "btrfs quota enable "+fs.Dir) {
		t.Errorf("btrfs without qgroups: quota %+v", info.Quota)
	}
	if !strings.HasPrefix(info.Degraded, "btrfs: no disk quota") {
		t.Errorf("degraded = %q", info.Degraded)
	}
	// Probing left quotas as they were, off.
	if out, err := exec.Command("btrfs", "qgroup", "show", fs.Dir).CombinedOutput(); err == nil {
		t.Errorf("qgroups are on after Probe:\n%s", out)
	}
	confirm(t, fs.Dir, info)
	noSubvolumesLeft(t, fs.Dir)
}

func TestProbeBtrfsQgroups(t *testing.T) {
	t.Parallel()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "btrfs"})
	run(t, "btrfs", "quota", "enable", fs.Dir)
	info := probeIn(t, fs.Dir)
	if info.Kind != Btrfs || info.Snapshot != SnapshotSubvolume {
		t.Errorf("btrfs: got %+v", plain(info))
	}
	if info.Quota != (Quota{Mechanism: QuotaQgroup, Enabled: true}) {
		t.Errorf("btrfs with qgroups: quota %+v", info.Quota)
	}
	if info.Degraded != "" {
		t.Errorf("degraded = %q, want nothing", info.Degraded)
	}
	confirm(t, fs.Dir, info)

	// The claim: a qgroup limit on a subvolume stops writes past it.
	sv := filepath.Join(fs.Dir, "limited")
	run(t, "btrfs", "subvolume", "create", sv)
	run(t, "btrfs", "qgroup", "limit", "8M", sv)
	n, err := fill(t, filepath.Join(sv, "big"), 64<<20)
	if !errors.Is(err, unix.EDQUOT) {
		t.Errorf("writing 64 MiB under an 8 MiB qgroup limit: %d bytes, %v; want EDQUOT", n, err)
	}
	if n > 8<<20 {
		t.Errorf("wrote %d bytes under an 8 MiB limit", n)
	}
	t.Logf("qgroup limit 8M: wrote %d bytes, then %v", n, err)
	run(t, "btrfs", "subvolume", "delete", sv)
	noSubvolumesLeft(t, fs.Dir)
}

// noSubvolumesLeft waits for deleted subvolumes to be cleaned and checks
// that none remains, and no qgroup but the top level's (when qgroups are
// on): Probe's trial subvolumes are gone with their qgroups.
func noSubvolumesLeft(t *testing.T, mnt string) {
	t.Helper()
	// A commit wakes the cleaner, which would otherwise wait for the
	// next periodic one (30 s).
	run(t, "btrfs", "filesystem", "sync", mnt)
	run(t, "btrfs", "subvolume", "sync", mnt)
	if out := strings.TrimSpace(run(t, "btrfs", "subvolume", "list", mnt)); out != "" {
		t.Errorf("subvolumes left:\n%s", out)
	}
	out, err := exec.Command("btrfs", "qgroup", "show", mnt).CombinedOutput()
	if err != nil {
		return // qgroups off
	}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "0/") && f[0] != "0/5" {
			t.Errorf("qgroup left after its subvolume went: %s", strings.TrimSpace(line))
		}
	}
}

func TestProbeXFS(t *testing.T) {
	t.Parallel()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "xfs"})
	info := probeIn(t, fs.Dir)
	if info.Filesystem != "xfs" || info.Kind != XFS || info.Snapshot != SnapshotReflink || !info.Reflink || !info.Overlay {
		t.Errorf("xfs: got %+v", plain(info))
	}
	if kernelHasXFSQuota() {
		if info.Quota.Mechanism != QuotaProject || info.Quota.Enabled || !strings.Contains(info.Quota.Hint, "prjquota") {
			t.Errorf("xfs without prjquota: quota %+v", info.Quota)
		}
	} else if info.Quota.Mechanism != QuotaNone || !strings.Contains(info.Quota.Hint, "no XFS quota support") {
		t.Errorf("xfs on a kernel without XFS quota: quota %+v", info.Quota)
	}
	confirm(t, fs.Dir, info)
}

func TestProbeXFSNoReflink(t *testing.T) {
	t.Parallel()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "xfs", Mkfs: []string{"-m", "reflink=0"}})
	info := probeIn(t, fs.Dir)
	if info.Filesystem != "xfs" || info.Kind != Overlay || info.Snapshot != SnapshotCopy || info.Reflink {
		t.Errorf("xfs without reflink: got %+v", plain(info))
	}
	if !strings.Contains(info.Degraded, "no instant snapshots") {
		t.Errorf("degraded = %q", info.Degraded)
	}
	confirm(t, fs.Dir, info)
}

// kernelHasXFSQuota is what the kernel says: it has xfs quota support when
// an xfs mount with -o prjquota works. The tests hold Probe's cheaper
// reading (/proc/fs/xfs/xqm) to it.
func kernelHasXFSQuota() bool {
	_, err := os.Stat("/proc/fs/xfs/xqm")
	return err == nil
}

func TestProbeXFSPrjquota(t *testing.T) {
	t.Parallel()
	fs, err := testutil.TryLoopFS(t, testutil.LoopFSConfig{Type: "xfs", Options: "prjquota"})
	if err != nil {
		// Probe must then have said, on a plain xfs, that this kernel has none.
		if kernelHasXFSQuota() {
			t.Fatalf("the kernel refused -o prjquota though /proc/fs/xfs/xqm is there: %v", err)
		}
		t.Logf("this kernel refuses xfs -o prjquota, as Probe reports: %v", err)
		return
	}
	if !kernelHasXFSQuota() {
		t.Errorf("xfs -o prjquota mounted, but /proc/fs/xfs/xqm is missing: Probe would say there is no xfs quota")
	}
	info := probeIn(t, fs.Dir)
	if info.Kind != XFS || info.Quota != (Quota{Mechanism: QuotaProject, Enabled: true}) || info.Degraded != "" {
		t.Errorf("xfs with prjquota: got %+v", plain(info))
	}
	confirm(t, fs.Dir, info)

	// The claim: a project quota on a directory tree stops writes past it
	// (xfs answers ENOSPC for a project quota, EDQUOT for others).
	dir := filepath.Join(fs.Dir, "limited")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "xfs_quota", "-x", "-c", "project -s -p "+dir+" 42", fs.Dir)
	run(t, "xfs_quota", "-x", "-c", "limit -p bhard=8m 42", fs.Dir)
	n, err := fill(t, filepath.Join(dir, "big"), 64<<20)
	if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) {
		t.Errorf("writing 64 MiB under an 8 MiB project quota: %d bytes, %v; want ENOSPC or EDQUOT", n, err)
	}
	if n > 8<<20 {
		t.Errorf("wrote %d bytes under an 8 MiB limit", n)
	}
	t.Logf("project quota 8m: wrote %d bytes, then %v", n, err)
}

func TestProbeExt4(t *testing.T) {
	t.Parallel()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "ext4"})
	info := probeIn(t, fs.Dir)
	if info.Filesystem != "ext4" || info.Kind != Overlay || info.Snapshot != SnapshotCopy || info.Reflink || !info.Overlay {
		t.Errorf("ext4: got %+v", plain(info))
	}
	if info.Quota.Mechanism != QuotaProject || info.Quota.Enabled {
		t.Errorf("ext4 without prjquota: quota %+v", info.Quota)
	}
	if !strings.HasPrefix(info.Degraded, "overlay on ext4: no instant snapshots, no disk quota") {
		t.Errorf("degraded = %q", info.Degraded)
	}
	confirm(t, fs.Dir, info)
}

func TestProbeExt4Prjquota(t *testing.T) {
	t.Parallel()
	fs, err := testutil.TryLoopFS(t, testutil.LoopFSConfig{Type: "ext4", Mkfs: []string{"-O", "quota,project"}, Options: "prjquota"})
	if err != nil {
		// A kernel without CONFIG_QFMT_V2 mounts no ext4 with the quota
		// feature at all; Probe never sees one there.
		t.Logf("this kernel refuses ext4 with the quota feature: %v", err)
		return
	}
	info := probeIn(t, fs.Dir)
	if info.Kind != Overlay || info.Quota != (Quota{Mechanism: QuotaProject, Enabled: true}) {
		t.Errorf("ext4 with prjquota: got %+v", plain(info))
	}
	if info.Degraded != "overlay on ext4: no instant snapshots" {
		t.Errorf("degraded = %q", info.Degraded)
	}
	confirm(t, fs.Dir, info)
}

func TestProbeTmpfs(t *testing.T) {
	t.Parallel()
	dir := testutil.Tmpfs(t, "size=64m")
	info := probeIn(t, dir)
	if info.Filesystem != "tmpfs" || info.Kind != Overlay || info.Snapshot != SnapshotCopy || info.Reflink || !info.Overlay {
		t.Errorf("tmpfs: got %+v", plain(info))
	}
	if info.Quota.Mechanism != QuotaNone || info.Quota.Enabled {
		t.Errorf("tmpfs: quota %+v", info.Quota)
	}
	confirm(t, dir, info)
}

// TestProbeOverlayfs: a data directory on an overlay (a container's root)
// takes no overlay upper layer; Probe finds no backend and says why.
func TestProbeOverlayfs(t *testing.T) {
	t.Parallel()
	base := testutil.Tmpfs(t, "size=64m")
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(base, "merged")
	opts := "lowerdir=" + base + "/lower,upperdir=" + base + "/upper,workdir=" + base + "/work"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount the overlay the data directory sits on: %v", err)
	}
	t.Cleanup(func() { unmount(t, merged) })
	info := probeIn(t, merged)
	if info.Filesystem != "overlayfs" || info.Kind != None || info.Overlay {
		t.Errorf("overlayfs: got %+v", plain(info))
	}
	if !strings.HasPrefix(info.Degraded, "no storage backend works on overlayfs: ") {
		t.Errorf("degraded = %q", info.Degraded)
	}
	confirm(t, merged, info)
}

// TestProbeWithoutMountPrivilege: without CAP_SYS_ADMIN (hutch rootless)
// the overlay cannot be tried; Probe says so and goes by the filesystem.
func TestProbeWithoutMountPrivilege(t *testing.T) {
	t.Parallel()
	dir := testutil.Tmpfs(t, "size=64m")
	data, scratch := filepath.Join(dir, "data"), filepath.Join(dir, "data", "tmp")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	type result struct {
		info Info
		err  error
	}
	done := make(chan result)
	go func() {
		// Credentials are per thread: drop CAP_SYS_ADMIN from this one
		// thread and let it end with the goroutine, never unlocked.
		runtime.LockOSThread()
		if err := dropCapSysAdmin(); err != nil {
			done <- result{err: err}
			return
		}
		info, err := Probe(data, scratch)
		done <- result{info, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("Probe = %+v", plain(r.info))
	if r.info.Kind != Overlay || !r.info.Overlay {
		t.Errorf("tmpfs without CAP_SYS_ADMIN: got %+v", plain(r.info))
	}
	if !strings.Contains(strings.Join(r.info.Notes, "\n"), "overlay: not tried") {
		t.Errorf("notes %q do not say the overlay was not tried", r.info.Notes)
	}
}

func dropCapSysAdmin() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
	return unix.Capset(&hdr, &data[0])
}

func TestProbeScratchOnAnotherMount(t *testing.T) {
	t.Parallel()
	a, b := testutil.Tmpfs(t, "size=1m"), testutil.Tmpfs(t, "size=1m")
	_, err := Probe(a, b)
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("Probe with the scratch on another mount: %v, want ErrInvalid", err)
	}
}

// TestProbeTempDir probes whatever holds the test's temporary directory,
// as any user: no error, nothing left behind, and without root a note
// that the overlay was not tried.
func TestProbeTempDir(t *testing.T) {
	t.Parallel()
	info := probeIn(t, t.TempDir())
	if info.Filesystem == "" || info.Mount.Point == "" {
		t.Errorf("got %+v", plain(info))
	}
	notTried := strings.Contains(strings.Join(info.Notes, "\n"), "overlay: not tried")
	if os.Geteuid() != 0 && !notTried {
		t.Errorf("not root, yet notes %q do not say the overlay was not tried", info.Notes)
	}
	if os.Geteuid() == 0 && notTried {
		t.Errorf("root, yet notes %q say the overlay was not tried", info.Notes)
	}
}

func TestProbeMissingDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nope")
	if _, err := Probe(dir, dir); err == nil {
		t.Error("Probe of a directory that does not exist: no error")
	}
}
