// Package loopdev attaches a file to a loop device and waits for one to
// detach: what the tests' and the storage benchmark's loop filesystems
// share.
package loopdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Attach attaches img to a free loop device with autoclear, retrying
// when another process takes the device the kernel offered between the two
// calls. The caller closes the device.
func Attach(img *os.File, name string) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	for range 64 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev, err := os.OpenFile(fmt.Sprintf("/dev/loop%d", n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], name)
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("LOOP_CONFIGURE /dev/loop%d: %w", n, err)
		}
	}
	return nil, errors.New("no free loop device after 64 tries")
}

// Detached reports whether dev has no backing file.
func Detached(dev string) bool {
	_, err := os.Stat(backingFile(dev))
	return errors.Is(err, os.ErrNotExist)
}

// backingFile is where the kernel shows dev's backing file.
func backingFile(dev string) string {
	return filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file")
}

// WaitDetached waits up to five seconds for dev to have no backing file.
func WaitDetached(dev string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(backingFile(dev))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loopdev: %s is still attached to %s; something still holds its filesystem", dev, strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
