package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// DataDir is a data directory for one test, made the way an operator who
// runs the process driver as root makes it: each sandbox's own uid looks
// its directory up by path, so every directory down to <data>/sandboxes
// lets others enter (not list). hutch never opens a directory itself; the
// first-start test holds it to that.
func DataDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	for _, p := range []string{filepath.Dir(base), base, dir, filepath.Join(dir, "sandboxes")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
