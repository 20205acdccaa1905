package templates

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/store"
)

// blobDir keeps each image layer as its source stored it (compressed),
// by digest: layers/blobs/<hex>. They are what another node of a fleet
// fetches (fetch.go), since an unpacked layer cannot be checked against
// the image's digests once unpacked; every import goes through them, so
// a template made here can be fetched from here.
const blobDir = "blobs"

// blobPath is where the blob digest is kept.
func (l *Layers) blobPath(digest string) string {
	return filepath.Join(l.root, blobDir, strings.TrimPrefix(digest, "sha256:"))
}

// hasBlob reports whether the blob digest is kept here.
func (l *Layers) hasBlob(digest string) bool {
	_, err := os.Stat(l.blobPath(digest))
	return err == nil
}

// keepBlob writes the blob src reads into the store as digest, unless it
// is there: at most size bytes (and at most the store's bound), checked
// against digest before it takes its name, so a blob in the store is
// always whole and what its name says. progress, if set, is told the
// bytes read so far.
func (l *Layers) keepBlob(digest string, size int64, src io.Reader, progress func(int64)) error {
	if err := checkDiffID(digest); err != nil {
		return err
	}
	if l.hasBlob(digest) {
		return nil
	}
	if size <= 0 || size > l.maxBytes {
		return errdefs.New(errdefs.ErrTooLarge, "layer_too_large", "layer %s is %d bytes; at most %d are taken", digest, size, l.maxBytes)
	}
	f, err := os.CreateTemp(filepath.Join(l.root, blobDir), ".partial-")
	if err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), &counted{r: io.LimitReader(src, size+1), progress: progress})
	if err != nil {
		return fmt.Errorf("read layer %s: %w", digest, err)
	}
	if err := checkBlob(digest, size, n, h); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	if err := os.Rename(f.Name(), l.blobPath(digest)); err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	return nil
}

// checkBlob refuses a blob of n bytes hashed by h that is not the size
// bytes digest names.
func checkBlob(digest string, size, n int64, h hash.Hash) error {
	if n != size {
		return errdefs.Invalid("layer_digest_mismatch", "layer %s: %d bytes where %d were expected", digest, n, size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return errdefs.Invalid("layer_digest_mismatch", "layer %s: its bytes hash to %s", digest, got)
	}
	return nil
}

// keepBlobs keeps each of img's layers as a blob and points the layer
// at it, so unpacking reads the copy kept (and checked) here, and
// returns the blobs as the template records them.
func (l *Layers) keepBlobs(ctx context.Context, img *image.Image) ([]store.TemplateBlob, error) {
	out := make([]store.TemplateBlob, 0, len(img.Layers))
	for i, ly := range img.Layers {
		if !l.hasBlob(ly.Digest) {
			rc, err := ly.Open(ctx)
			if err != nil {
				return nil, err
			}
			err = l.keepBlob(ly.Digest, ly.Size, rc, nil)
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
		b := store.TemplateBlob{Digest: ly.Digest, DiffID: ly.DiffID, Size: ly.Size}
		img.Layers[i].Open = l.blobOpener(b)
		out = append(out, b)
	}
	return out, nil
}

// blobOpener opens the kept blob b, for image.Layer.Open.
func (l *Layers) blobOpener(b store.TemplateBlob) func(context.Context) (io.ReadCloser, error) {
	return func(context.Context) (io.ReadCloser, error) {
		f, err := os.Open(l.blobPath(b.Digest))
		if err != nil {
			return nil, fmt.Errorf("layer store: %w", err)
		}
		return f, nil
	}
}

// blobImage is an image made of the kept blobs: what a node that fetched
// a template's blobs unpacks, as an import does.
func (l *Layers) blobImage(t *store.Template) *image.Image {
	img := &image.Image{Digest: t.Digest, Ref: t.Source}
	for _, b := range t.Blobs {
		img.Layers = append(img.Layers, image.Layer{Digest: b.Digest, DiffID: b.DiffID, Size: b.Size, Open: l.blobOpener(b)})
	}
	return img
}

// openBlob opens the kept blob digest; ErrNotFound when it is not here.
func (l *Layers) openBlob(digest string) (*os.File, error) {
	if err := checkDiffID(digest); err != nil {
		return nil, err
	}
	f, err := os.Open(l.blobPath(digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errdefs.NotFound("blob_not_here", "layer %s is not kept on this node", digest)
	}
	if err != nil {
		return nil, fmt.Errorf("layer store: %w", err)
	}
	return f, nil
}

// counted tells progress how many bytes were read through it.
type counted struct {
	r        io.Reader
	n        int64
	progress func(int64)
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.n)
	}
	return n, err
}
