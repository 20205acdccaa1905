package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tryReflink makes a file of 64 KiB in dir and clones it into another
// with FICLONE, then reads the clone back.
func tryReflink(dir string) error {
	data := bytes.Repeat([]byte("hutch reflink probe\n"), 64<<10/20)
	srcPath := filepath.Join(dir, "reflink-src")
	if err := os.WriteFile(srcPath, data, 0o600); err != nil {
		return err
	}
	src, err := os.Open(srcPath)
	if err != nil {
		return err
	}
	defer src.Close()
	dstPath := filepath.Join(dir, "reflink-dst")
	dst, err := os.OpenFile(dstPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())); err != nil {
		return fmt.Errorf("FICLONE: %w", err)
	}
	got, err := os.ReadFile(dstPath)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return errors.New("FICLONE succeeded but the clone's bytes differ from the source's")
	}
	return nil
}

// tryOverlay asks the kernel for an overlay whose upper and work
// directories are in dir, with the new mount API: the superblock is made
// (which is where overlayfs checks its upper layer's filesystem) and
// dropped, never attached to a mount table. Without the privilege to do
// so it returns an error wrapping errNotTried.
func tryOverlay(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	layers := map[string]string{}
	for _, l := range []string{"lowerdir", "upperdir", "workdir"} {
		p := filepath.Join(dir, "overlay", strings.TrimSuffix(l, "dir"))
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		layers[l] = p
	}
	fd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: fsopen: %w", errNotTried, err)
	case errors.Is(err, unix.ENODEV):
		return errors.New("this kernel has no overlay filesystem")
	case err != nil:
		return fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fd)
	for _, l := range []string{"lowerdir", "upperdir", "workdir"} {
		if err := unix.FsconfigSetString(fd, l, escapeOverlay(layers[l])); err != nil {
			return fmt.Errorf("%s: %w%s", l, err, fsLog(fd))
		}
	}
	if err := unix.FsconfigCreate(fd); err != nil {
		return fmt.Errorf("the kernel refused an overlay with its upper layer here: %w%s", err, fsLog(fd))
	}
	return nil
}

// escapeOverlay escapes what overlayfs splits its layer options on.
func escapeOverlay(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`).Replace(p)
}

// fsLog reads the messages a filesystem context logged (the reason the
// kernel gives for refusing a mount), as ": message; message".
func fsLog(fd int) string {
	var msgs []string
	buf := make([]byte, 4096)
	for range 16 {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		msg := strings.TrimSpace(string(buf[:n]))
		// Each message starts with its level: "e ", "w " or "i ".
		if len(msg) > 2 && msg[1] == ' ' {
			msg = msg[2:]
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return ""
	}
	return " (" + strings.Join(msgs, "; ") + ")"
}
