package launch

import (
	"fmt"
	"os"
	"path/filepath"
)

// OpenPath makes every directory from / down to dir traversable (o+x) by
// the sandboxes' uids, without making anything listable or readable.
func OpenPath(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("make %s traversable for sandbox users: %w", p, err)
			}
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// WorldExecutable checks that a sandbox uid can run path.
func WorldExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("agent %s must be readable and executable by others (mode %v)", path, st.Mode().Perm())
	}
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("agent %s is not reachable by sandbox users: %s is not traversable by others", path, p)
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}
