package files

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func TestResolvePath(t *testing.T) {
	tests := []struct {
		root, workdir, in string
		abs, rel          string
		code              string
	}{
		{"/sb", "/sb/work", "a.txt", "/sb/work/a.txt", "work/a.txt", ""},
		{"/sb", "/sb/work", "./a/./b/", "/sb/work/a/b", "work/a/b", ""},
		{"/sb", "/sb/work", "/sb/x", "/sb/x", "x", ""},
		{"/sb", "/sb/work", "/sb", "/sb", ".", ""},
		{"/sb", "/sb/work", "//sb//x//", "/sb/x", "x", ""},
		{"/sb", "/sb", ".", "/sb", ".", ""},
		{"/sb", "/sb/work", "...", "/sb/work/...", "work/...", ""},
		{"/", "/home", "x", "/home/x", "home/x", ""},
		{"/", "/", "/", "/", ".", ""},
		{"/", "/", "/etc/passwd", "/etc/passwd", "etc/passwd", ""},
		{"/sb", "/sb/work", "", "", "", "invalid_path"},
		{"/sb", "/sb/work", "a\x00b", "", "", "invalid_path"},
		{"/sb", "/sb/work", "..", "", "", "invalid_path"},
		{"/sb", "/sb/work", "a/../b", "", "", "invalid_path"},
		{"/sb", "/sb/work", "/sb/work/..", "", "", "invalid_path"},
		{"/sb", "/sb/work", "/etc/passwd", "", "", "path_outside_sandbox"},
		{"/sb", "/sb/work", "/sbx/y", "", "", "path_outside_sandbox"},
		{"/sb", "/sb/work", "/", "", "", "path_outside_sandbox"},
	}
	for _, tt := range tests {
		got, err := resolvePath(tt.root, tt.workdir, tt.in)
		if tt.code != "" {
			var e *errdefs.Error
			if !errors.As(err, &e) || e.Code != tt.code || !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("resolvePath(%q, %q, %q) = %+v, %v; want code %s", tt.root, tt.workdir, tt.in, got, err, tt.code)
			}
			continue
		}
		if err != nil || got.Abs != tt.abs || got.Rel != tt.rel {
			t.Errorf("resolvePath(%q, %q, %q) = %+v, %v; want {%s %s}", tt.root, tt.workdir, tt.in, got, err, tt.abs, tt.rel)
		}
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "/sb/x", "..", "a/../b", "/", "", ".", "a\x00", "//sb//", "/sbx", "x/..."} {
		f.Add("/sb", "/sb/work", s)
		f.Add("/", "/", s)
	}
	f.Fuzz(func(t *testing.T, root, workdir, in string) {
		// The configuration is validated before use; fuzz only valid ones.
		if !path.IsAbs(root) || path.Clean(root) != root || !path.IsAbs(workdir) || path.Clean(workdir) != workdir {
			return
		}
		if root != "/" && workdir != root && !strings.HasPrefix(workdir, root+"/") {
			return
		}
		got, err := resolvePath(root, workdir, in)
		hasDotDot := false
		for _, c := range strings.Split(in, "/") {
			hasDotDot = hasDotDot || c == ".."
		}
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("error %v is not classed invalid", err)
			}
			return
		}
		switch {
		case in == "" || strings.IndexByte(in, 0) >= 0 || hasDotDot:
			t.Fatalf("%q accepted as %+v", in, got)
		case !path.IsAbs(got.Abs) || path.Clean(got.Abs) != got.Abs:
			t.Fatalf("abs %q is not clean and absolute", got.Abs)
		case root != "/" && got.Abs != root && !strings.HasPrefix(got.Abs, root+"/"):
			t.Fatalf("abs %q is outside root %q", got.Abs, root)
		case strings.HasPrefix(got.Rel, "/") || got.Rel == "":
			t.Fatalf("rel %q is empty or absolute", got.Rel)
		case path.Join(root, got.Rel) != got.Abs:
			t.Fatalf("root + rel %q != abs %q", path.Join(root, got.Rel), got.Abs)
		}
		for _, c := range strings.Split(got.Rel, "/") {
			if c == ".." {
				t.Fatalf("rel %q has a .. component", got.Rel)
			}
		}
	})
}
