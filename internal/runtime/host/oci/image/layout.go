package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Annotations that name an image in a layout's index.json: the OCI one
// (skopeo, umoci, buildkit write a tag there) and the one containerd and
// Docker write the full reference to.
const (
	annotationRefName       = "org.opencontainers.image.ref.name"
	annotationContainerName = "io.containerd.image.name"
)

// openPath opens the directory or tar at src.Path, tells an OCI layout
// from a `docker save` archive by what it holds, and opens the image.
func openPath(ctx context.Context, src Source, want v1.Platform) (_ *Image, retErr error) {
	fi, err := os.Stat(src.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errdefs.Wrap(errdefs.ErrNotFound, CodeNotFound, err, "there is no image at %s", src.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var (
		fsys    fs.FS
		release func() error
	)
	switch {
	case fi.IsDir():
		root, err := os.OpenRoot(src.Path)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		fsys, release = dirFS{root}, root.Close
	case fi.Mode().IsRegular():
		t, err := openTarFS(src.Path)
		if err != nil {
			return nil, err
		}
		fsys, release = t, t.Close
	default:
		return nil, errdefs.Invalid(CodeInvalid, "%s is neither a directory nor a tar file", src.Path)
	}
	defer func() {
		if retErr != nil {
			release()
		}
	}()

	var img *Image
	switch {
	case exists(fsys, "index.json"):
		img, err = openLayout(ctx, fsys, src.Name, want)
	case exists(fsys, "manifest.json"):
		img, err = openDockerSave(ctx, fsys, src.Name, want)
	default:
		err = errdefs.Invalid(CodeInvalid, "%s is neither an OCI image layout (it has no index.json) nor a docker save archive (no manifest.json)", src.Path)
	}
	if err != nil {
		return nil, err
	}
	img.Ref = src.Path
	if src.Name != "" {
		img.Ref += ":" + src.Name
	}
	img.close = release
	return img, nil
}

// dirFS is a layout directory, read through an os.Root so that no name
// or symlink leads out of it. Only regular files open: opening a FIFO
// would wait for a writer forever.
type dirFS struct{ root *os.Root }

func (d dirFS) Open(name string) (fs.File, error) {
	f, err := d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// openLayout opens the image of an OCI layout index.json names: the one
// annotated name, or when name is empty its only entry. An index.json of
// several entries none of which is named is an index of platforms.
func openLayout(ctx context.Context, fsys fs.FS, name string, want v1.Platform) (*Image, error) {
	if exists(fsys, "oci-layout") {
		b, err := readFile(fsys, "oci-layout", MaxManifestBytes)
		if err != nil {
			return nil, err
		}
		var l struct {
			Version string `json:"imageLayoutVersion"`
		}
		if err := json.Unmarshal(b, &l); err != nil || !strings.HasPrefix(l.Version, "1.") {
			return nil, errdefs.Invalid(CodeInvalid, "the layout's oci-layout file does not say imageLayoutVersion 1.x")
		}
	}
	b, err := readFile(fsys, "index.json", MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the layout's index.json is not valid")
	}
	st := &fsStore{fsys: fsys}

	var (
		names    []string
		match    []v1.Descriptor
		digests  = map[v1.Hash]bool{}
		anyNamed bool
	)
	for _, d := range idx.Manifests {
		n, c := d.Annotations[annotationRefName], d.Annotations[annotationContainerName]
		switch {
		case n != "":
			names = append(names, n)
		case c != "":
			names = append(names, c)
		}
		anyNamed = anyNamed || n != "" || c != ""
		digests[d.Digest] = true
		if name != "" && (n == name || c != "" && sameTag(c, name)) {
			match = append(match, d)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	switch {
	case name != "" && len(match) == 0:
		return nil, errdefs.New(errdefs.ErrNotFound, CodeNotFound, "the layout has no image named %q; it has %s", name, listOrNone(names))
	case name != "":
		for _, d := range match[1:] {
			if d.Digest != match[0].Digest {
				return nil, errdefs.Invalid(CodeInvalid, "the layout names %d different images %q", len(match), name)
			}
		}
		return resolve(ctx, st, match[0], nil, want)
	case len(idx.Manifests) == 0:
		return nil, errdefs.Invalid(CodeInvalid, "the layout holds no image")
	case len(digests) == 1: // one image, perhaps under several names
		return resolve(ctx, st, idx.Manifests[0], nil, want)
	case !anyNamed:
		// index.json is an image index itself: one image per platform.
		d, err := pick(&idx, want)
		if err != nil {
			return nil, err
		}
		return resolve(ctx, st, d, nil, want)
	}
	return nil, errdefs.Invalid(CodeInvalid, "the layout holds %d images; name one (%s)", len(idx.Manifests), listOrNone(names))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no names"
	}
	return strings.Join(names, ", ")
}

// readFile reads a small file of fsys whole, at most limit bytes.
func readFile(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, sourceError(name, err)
	}
	defer f.Close()
	b, err := readAtMost(f, limit)
	if err != nil {
		return nil, sourceError(name, err)
	}
	return b, nil
}

// sourceError classifies a failure to read name from a layout or an
// archive: the source is what is wrong.
func sourceError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image source has no %s", name)
	case errors.Is(err, errTooBig):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image source's %s is too large", name)
	case errors.Is(err, fs.ErrClosed):
		return fmt.Errorf("image: read %s: %w", name, err)
	}
	return errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image source's %s cannot be read", name)
}

// fsStore is the store of an OCI layout: blobs/<algorithm>/<hex>, in a
// directory (through an os.Root, so no symlink leads out of it) or a tar.
type fsStore struct {
	fsys fs.FS
	// paths, when set, maps digests to the files that hold them, as a
	// docker save archive names its blobs; mem holds blobs made up in
	// memory (the manifest Open derives for a docker save archive).
	paths map[v1.Hash]string
	mem   map[v1.Hash][]byte
}

func (s *fsStore) path(d v1.Descriptor) string {
	if p, ok := s.paths[d.Digest]; ok {
		return p
	}
	// checkDigest has made Algorithm "sha256" and Hex lowercase hex.
	return "blobs/" + d.Digest.Algorithm + "/" + d.Digest.Hex
}

func (s *fsStore) manifest(ctx context.Context, d v1.Descriptor, limit int64) ([]byte, error) {
	return s.blob(ctx, d, limit)
}

func (s *fsStore) blob(_ context.Context, d v1.Descriptor, limit int64) ([]byte, error) {
	if b, ok := s.mem[d.Digest]; ok {
		return b, nil
	}
	return readFile(s.fsys, s.path(d), limit)
}

func (s *fsStore) open(_ context.Context, d v1.Descriptor) (io.ReadCloser, error) {
	name := s.path(d)
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, sourceError(name, err)
	}
	return f, nil
}

func (s *fsStore) has(_ context.Context, d v1.Descriptor) (bool, error) {
	return exists(s.fsys, s.path(d)), nil
}
