package launch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// Trash removes sandbox directories in the background: Remove renames a
// directory into the trash at once (so its name, and everything it holds,
// is gone from the driver's view) and deletes it afterwards, which on disks
// that discard every freed block can take milliseconds a destroy need not
// wait for. What a crash leaves in the trash, Sweep deletes.
type Trash struct {
	dir string
	wg  sync.WaitGroup
}

// NewTrash keeps the trash in dir, which must be on the same file system
// as the directories it takes.
func NewTrash(dir string) *Trash { return &Trash{dir: dir} }

// Remove takes dir away; a dir that is already gone is not an error. When
// it cannot be moved it is removed before Remove returns.
func (t *Trash) Remove(dir string) error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return RemoveAll(dir)
	}
	to := filepath.Join(t.dir, filepath.Base(dir)+"-"+ids.New())
	switch err := os.Rename(dir, to); {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return RemoveAll(dir)
	}
	t.wg.Go(func() { _ = RemoveAll(to) })
	return nil
}

// Sweep deletes what is in the trash now, in the background.
func (t *Trash) Sweep() {
	entries, _ := os.ReadDir(t.dir)
	for _, e := range entries {
		p := filepath.Join(t.dir, e.Name())
		t.wg.Go(func() { _ = RemoveAll(p) })
	}
}

// Wait returns once every deletion started so far has finished.
func (t *Trash) Wait() { t.wg.Wait() }
