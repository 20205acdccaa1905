package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// EnsureDir makes dir, one of a driver's own directories, with mode; one
// that exists with another mode gets mode, and the change is logged. It
// never touches a directory above dir.
func EnsureDir(dir string, mode fs.FileMode, log *slog.Logger) error {
	err := os.Mkdir(dir, mode)
	if err == nil {
		return os.Chmod(dir, mode) // past the umask
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st.Mode().Perm() == mode {
		return nil
	}
	if err := os.Chmod(dir, mode); err != nil {
		return err
	}
	log.Info("set the mode of a driver directory", "path", dir, "from", fmt.Sprintf("%04o", st.Mode().Perm()), "to", fmt.Sprintf("%04o", mode))
	return nil
}

// Reachable checks that other users may enter every directory from / to
// path (path included; o+x), so that a sandbox running as a uid of its own
// can look path up. Otherwise the error lists the closed ones, top down,
// and how the operator opens them: hutch never does that itself.
func Reachable(path string) error {
	var closed []string
	for p := path; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			closed = append([]string{fmt.Sprintf("%s (%04o)", p, st.Mode().Perm())}, closed...)
		}
		if p == "/" || p == "." {
			break
		}
	}
	if len(closed) == 0 {
		return nil
	}
	return fmt.Errorf("%s must be reachable by sandbox users, but these directories are closed to other users: %s; hutch changes no permissions of yours: open them with 'chmod o+x' on each, or choose a directory others can enter",
		path, strings.Join(closed, ", "))
}
