package osthread

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNeverTheMainThread: whatever thread the scheduler offers, fn runs
// on one that is not the main thread, even when the main thread is the
// only one free.
func TestNeverTheMainThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	onMain := unix.Gettid() == unix.Getpid()
	for range 200 {
		var tid int
		if err := Discarded(func() error { tid = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		if tid == unix.Getpid() {
			t.Fatalf("fn ran on the main thread (the test goroutine holds the main thread: %v)", onMain)
		}
	}
}

// TestMainThreadOffered: a goroutine that finds itself on the main thread
// hands the work on; the main thread comes back unchanged.
func TestMainThreadOffered(t *testing.T) {
	// /proc/self is the process's main thread.
	before, err := os.Readlink("/proc/self/cwd")
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if err := Discarded(func() error {
			if unix.Gettid() == unix.Getpid() {
				t.Error("fn ran on the main thread")
			}
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return err
			}
			return unix.Chdir("/proc")
		}); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := os.Readlink("/proc/self/cwd"); after != before {
		t.Errorf("the process's working directory moved from %s to %s", before, after)
	}
}
