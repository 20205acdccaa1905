package kubernetes

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// templateImages are the images of image templates this driver pushed,
// by the template's flattened tree: each is packed and pushed once, by
// the first create that needs it, while the others wait for it.
type templateImages struct {
	mu   sync.Mutex
	refs map[string]*templateImage
}

type templateImage struct {
	mu  sync.Mutex
	ref string
}

// imageTimeout bounds packing and pushing one template's image.
const imageTimeout = 10 * time.Minute

// templateRef is the registry reference of img, a template flattened
// into one tree (the layer store keeps a tree per template for a driver
// without shared layers), which it packs and pushes the first time.
func (d *Driver) templateRef(ctx context.Context, img *driver.Image) (string, error) {
	switch {
	case img.Host:
		return "", errdefs.New(errdefs.ErrUnsupported, "template_unsupported", "the kubernetes driver cannot start a template made over the host template (a snapshot of a sandbox of it); import an image instead")
	case img.Shared || len(img.Layers) != 1:
		return "", fmt.Errorf("the kubernetes driver takes an image flattened into one tree, not %d layers", len(img.Layers))
	}
	key := img.Layers[0]
	d.templates.mu.Lock()
	if d.templates.refs == nil {
		d.templates.refs = map[string]*templateImage{}
	}
	ti := d.templates.refs[key]
	if ti == nil {
		ti = &templateImage{}
		d.templates.refs[key] = ti
	}
	d.templates.mu.Unlock()

	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.ref != "" {
		return ti.ref, nil
	}
	ctx, cancel := context.WithTimeout(ctx, imageTimeout)
	defer cancel()
	start := time.Now()
	if err := os.MkdirAll(d.opts.Dir, 0o700); err != nil {
		return "", err
	}
	// The packed layer lives until the push has read it.
	f, err := os.CreateTemp(d.opts.Dir, "layer-*.tar.gz")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	built, err := packImage(ctx, f, img)
	if err != nil {
		return "", err
	}
	ref, err := push(ctx, d.cfg.Registry, "hutch/template", built)
	if err != nil {
		return "", err
	}
	d.log.Info("template image pushed", "image", ref, "took", time.Since(start).Round(time.Millisecond))
	ti.ref = ref
	return ref, nil
}

// packImage writes img's tree into f as one gzip layer, closes f, and
// returns the image of that layer with img's config.
func packImage(ctx context.Context, f *os.File, img *driver.Image) (v1.Image, error) {
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err := packTree(ctx, zw, img.Layers[0]); err != nil {
		f.Close()
		return nil, fmt.Errorf("pack the template's files: %w", err)
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(f.Name(), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return ociImage(v1.Config{Env: img.Env, WorkingDir: img.WorkingDir}, layer)
}

// packTree writes the tree at root as a tar: every directory, file,
// symlink and fifo with its mode and owner, hard links as links. Device
// nodes are left out: a container gets its own /dev.
func packTree(ctx context.Context, w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket) != 0 {
			return nil
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.Format = "", "", tar.FormatPAX
		st, _ := fi.Sys().(*syscall.Stat_t)
		if st != nil {
			h.Uid, h.Gid = int(st.Uid), int(st.Gid)
			if fi.Mode().IsRegular() && st.Nlink > 1 {
				id := [2]uint64{st.Dev, st.Ino}
				if first, ok := links[id]; ok {
					h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
				} else {
					links[id] = h.Name
				}
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// imageEnv is the environment of a sandbox started from img: the
// image's, under the sandbox's own.
func imageEnv(img *driver.Image) map[string]string {
	env := map[string]string{}
	for _, kv := range img.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
