package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// writeFile writes value to an existing cgroup file in one write, as the
// kernel wants; it never creates or truncates.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cgroups: write %q: %w", value, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cgroups: write %q: %w", value, err)
	}
	return nil
}

// readFile returns a cgroup file without its trailing newline.
func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readInt reads a file that holds one integer.
func readInt(path string) (int64, error) {
	s, err := readFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroups: read %s: %w", path, err)
	}
	return n, nil
}

// readKey returns the value of key in a flat keyed file ("key value" lines,
// as memory.events and memory.oom_control are), and 0 when key is absent
// (older kernels lack some keys).
func readKey(path, key string) (uint64, error) {
	s, err := readFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroups: read %s in %s: %w", key, path, err)
		}
		return n, nil
	}
	return 0, nil
}

// exists reports whether path exists; cgroup files appear and vanish with
// controllers and kernel versions.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// mkdirNew makes a group that must not exist yet.
func mkdirNew(path string) error {
	err := os.Mkdir(path, 0o755)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// mkdirShared makes a group that others may have made already (the parent).
func mkdirShared(path string) error {
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// rmdir removes a group. A group whose last task is still exiting answers
// EBUSY for a moment, so EBUSY is retried, backing off, until ctx ends. A
// group that is already gone is not an error.
func rmdir(ctx context.Context, path string) error {
	wait := time.Millisecond
	for {
		err := unix.Rmdir(path)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("cgroups: %w", &os.PathError{Op: "rmdir", Path: path, Err: err})
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("cgroups: rmdir %s: %w: %w", path, unix.EBUSY, err)
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
