package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/runtime/host/loopdev"
)

// mounted reports whether dir is a mount point in this mount namespace.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// attachedTo lists the loop devices whose backing file's name contains s.
func attachedTo(t *testing.T, s string) []string {
	t.Helper()
	files, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		t.Fatal(err)
	}
	var devs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), s) {
			devs = append(devs, strings.TrimSpace(string(b)))
		}
	}
	return devs
}

// checkGone fails t when fs is still mounted or its device still attached.
func checkGone(t *testing.T, fs *LoopFS) {
	t.Helper()
	if mounted(t, fs.Dir) {
		t.Errorf("%s is still mounted", fs.Dir)
	}
	if devs := attachedTo(t, fs.Image); len(devs) > 0 {
		t.Errorf("loop devices still attached to %s: %v", fs.Image, devs)
	}
}

func TestLoopFS(t *testing.T) {
	for _, typ := range []string{"ext4", "xfs", "btrfs"} {
		t.Run(typ, func(t *testing.T) {
			var fs *LoopFS
			t.Run("use", func(t *testing.T) {
				fs = NewLoopFS(t, LoopFSConfig{Type: typ})
				if !mounted(t, fs.Dir) {
					t.Fatalf("%s is not mounted", fs.Dir)
				}
				if devs := attachedTo(t, fs.Image); len(devs) != 1 {
					t.Fatalf("loop devices attached to %s: %v, want one", fs.Image, devs)
				}
				var st unix.Statfs_t
				if err := unix.Statfs(fs.Dir, &st); err != nil {
					t.Fatal(err)
				}
				want := map[string]int64{"ext4": unix.EXT4_SUPER_MAGIC, "xfs": unix.XFS_SUPER_MAGIC, "btrfs": unix.BTRFS_SUPER_MAGIC}[typ]
				if int64(st.Type) != want {
					t.Errorf("statfs type %#x, want %#x", st.Type, want)
				}
				if err := os.WriteFile(filepath.Join(fs.Dir, "f"), []byte("data"), 0o600); err != nil {
					t.Fatal(err)
				}
			})
			if fs == nil {
				return // skipped
			}
			checkGone(t, fs)
		})
	}
}

// TestLoopFSBusy: a file still open on the filesystem at cleanup, past
// the second the cleanup waits, makes the unmount lazy; the device
// detaches once the file closes.
func TestLoopFSBusy(t *testing.T) {
	var fs *LoopFS
	t.Run("use", func(t *testing.T) {
		fs = NewLoopFS(t, LoopFSConfig{Type: "ext4"})
		f, err := os.Create(filepath.Join(fs.Dir, "held"))
		if err != nil {
			t.Fatal(err)
		}
		// Runs before NewLoopFS's cleanup (cleanups run last first).
		t.Cleanup(func() { time.AfterFunc(1500*time.Millisecond, func() { f.Close() }) })
	})
	if fs == nil {
		return
	}
	checkGone(t, fs)
}

// TestLoopFSHeldElsewhere: another process's copy of the host's mounts
// (as a warm sandbox of another test's server holds one) keeps the device
// attached past the cleanup. That is no leak of the test's, so the test
// passes; the device detaches once the copy ends.
func TestLoopFSHeldElsewhere(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("no unshare (Debian package util-linux): %v", err)
	}
	var fs *LoopFS
	var holder *exec.Cmd
	passed := t.Run("use", func(t *testing.T) {
		fs = NewLoopFS(t, LoopFSConfig{Type: "ext4"})
		holder = exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "120")
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(holder.Process.Pid), "mountinfo"))
			ns, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(holder.Process.Pid), "ns", "mnt"))
			self, _ := os.Readlink("/proc/self/ns/mnt")
			if ns != self && mountsSource(string(b), fs.Device) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the holder never had a copy of the mount")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if fs == nil {
		return
	}
	if holder != nil && holder.Process != nil {
		holder.Process.Kill()
		holder.Wait()
	}
	if !passed {
		t.Fatal("a copy of the mount in another namespace failed the test that made it")
	}
	if err := loopdev.WaitDetached(fs.Device); err != nil {
		t.Errorf("after its holder ended: %v", err)
	}
}

func TestLoopFSMountRefused(t *testing.T) {
	fs, err := TryLoopFS(t, LoopFSConfig{Type: "ext4", Options: "no_such_option"})
	if err == nil {
		t.Fatalf("mount with an unknown option: no error, mounted on %s", fs.Dir)
	}
	t.Logf("refused as expected: %v", err)
	if devs := attachedTo(t, t.Name()); len(devs) > 0 {
		t.Errorf("loop devices left attached after the refused mount: %v", devs)
	}
}

// TestLoopFSFailingTest runs a test that makes a filesystem and fails,
// in a process of its own, and checks it left nothing behind.
func TestLoopFSFailingTest(t *testing.T) {
	if os.Getenv("HUTCH_LOOPFS_CHILD") != "" {
		fs := NewLoopFS(t, LoopFSConfig{Type: "ext4"})
		os.WriteFile(os.Getenv("HUTCH_LOOPFS_CHILD"), []byte(fs.Dir+"\n"+fs.Image), 0o600)
		t.Fatal("failing on purpose")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to attach a loop device and mount it; CI runs this as root")
	}
	where := filepath.Join(t.TempDir(), "where")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoopFSFailingTest$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HUTCH_LOOPFS_CHILD="+where)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failing on purpose") {
		t.Fatalf("the child test did not fail as it should: %v\n%s", err, out)
	}
	b, err := os.ReadFile(where)
	if err != nil {
		t.Fatalf("the child made no filesystem: %v\n%s", err, out)
	}
	dir, image, _ := strings.Cut(string(b), "\n")
	checkGone(t, &LoopFS{Dir: dir, Image: image})
	if _, err := os.Stat(image); !os.IsNotExist(err) {
		t.Errorf("the child's image %s is still there: %v", image, err)
	}
}

func TestTmpfs(t *testing.T) {
	var dir string
	t.Run("use", func(t *testing.T) {
		dir = Tmpfs(t, "size=1m")
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Type != unix.TMPFS_MAGIC {
			t.Errorf("statfs type %#x, want tmpfs", st.Type)
		}
	})
	if dir != "" && mounted(t, dir) {
		t.Errorf("%s is still mounted", dir)
	}
}
