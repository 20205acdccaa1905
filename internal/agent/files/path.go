package files

import (
	"path"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Path is a path of the sandbox, checked lexically (Root.Resolve): Abs is
// the path as the sandbox sees it (clean, absolute, inside root); Rel is
// the same path relative to root, "." for root itself, never with a ".."
// component or a leading slash. Rel is what goes to openat2 with
// RESOLVE_IN_ROOT, which then keeps symlinks inside root too.
type Path struct {
	Abs string
	Rel string
}

// isRoot reports whether p is root itself.
func (p Path) isRoot() bool { return p.Rel == "." }

// split returns the parent of p (relative to root) and p's final name.
// It must not be called on root.
func (p Path) split() (parent, name string) {
	return path.Dir(p.Rel), path.Base(p.Rel)
}

// resolvePath checks p lexically against root and workdir (both clean and
// absolute, workdir inside root). Empty paths, NUL bytes and ".."
// components are invalid; an absolute path must lie within root; a
// relative one is joined to workdir.
func resolvePath(root, workdir, p string) (Path, error) {
	switch {
	case p == "":
		return Path{}, errdefs.Invalid("invalid_path", "path is empty")
	case strings.IndexByte(p, 0) >= 0:
		return Path{}, errdefs.Invalid("invalid_path", "path holds a NUL byte")
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return Path{}, errdefs.Invalid("invalid_path", "path %q has a .. component", p)
		}
	}
	abs := p
	if !path.IsAbs(p) {
		abs = path.Join(workdir, p)
	}
	abs = path.Clean(abs)
	var rel string
	switch {
	case abs == root:
		rel = "."
	case root == "/":
		rel = abs[1:]
	case strings.HasPrefix(abs, root+"/"):
		rel = abs[len(root)+1:]
	default:
		return Path{}, errdefs.Invalid("path_outside_sandbox", "path %q is outside the sandbox root %s", p, root)
	}
	return Path{Abs: abs, Rel: rel}, nil
}

// sandboxPathOf returns the sandbox path of rel (relative to root).
func sandboxPathOf(root, rel string) string {
	return path.Join(root, rel)
}
