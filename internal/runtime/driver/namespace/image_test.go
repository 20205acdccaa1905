package namespace

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestImageWorkdirKeepsMode: a working directory's parents the image has
// are made in the fresh writable layer with the image's mode, its sticky
// and setgid bits included (os.Chmod drops a raw 0o1000), so a /tmp-like
// directory of the image stays sticky inside the sandbox.
func TestImageWorkdirKeepsMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("gives the sandbox's ids to what it makes: root only")
	}
	img := t.TempDir()
	for _, m := range []struct {
		p    string
		mode fs.FileMode
	}{{"shared", 0o777 | fs.ModeSticky}, {"shared/team", 0o775 | fs.ModeSetgid}} {
		if err := os.Mkdir(filepath.Join(img, m.p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(img, m.p), m.mode); err != nil {
			t.Fatal(err)
		}
	}
	st := state{Dir: t.TempDir(), Mapped: true, Image: &imageState{Layers: []string{img}, Shared: true}}
	if err := os.MkdirAll(filepath.Join(st.Dir, upperFS), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &Driver{}
	if err := d.personalizeImage(st, "sbx", account{id: 1000, gid: 1000}, "/shared/team/app"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{
		"shared":          fs.ModeDir | 0o777 | fs.ModeSticky,
		"shared/team":     fs.ModeDir | 0o775 | fs.ModeSetgid,
		"shared/team/app": fs.ModeDir | 0o755,
	} {
		fi, err := os.Lstat(filepath.Join(st.Dir, upperFS, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("/%s in the writable layer is %v; the image has %v", p, fi.Mode(), want)
		}
	}
}
