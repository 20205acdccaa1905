package templates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// The layer store, under the data directory:
//
//	layers/            0700, hutch's alone
//	  sha256/<hex>/    one layer unpacked in overlay form (its whiteouts
//	                   as overlayfs keeps them), named by its diff id,
//	                   with the image's own ids; shared by every template
//	  sha256/<hex>.json  what unpacking it found (its size)
//	  flat/<id>/       a whole image flattened into one tree, where layers
//	                   cannot be shared (see Layers.Shared)
//	  snap/<id>/       a sandbox's files copied from a snapshot: a layer in
//	                   overlayfs's form with the sandbox's own ids
//	  blobs/<hex>      a layer as its image stored it (compressed), by
//	                   digest: what other nodes fetch (blobs.go)
//	  incoming/        uploads on their way in
//
// A sandbox never writes here: its root is an overlay whose upper layer
// is its own.
const (
	sharedDir   = "sha256"
	flatDir     = "flat"
	snapDir     = "snap"
	incomingDir = "incoming"
)

// blobPrefix names a blob in collect's keep set (its digest follows).
const blobPrefix = "blob:"

// snapPrefix names, in a template's layers, a layer copied from a
// snapshot (snap/<id>), which has no diff id.
const snapPrefix = "snapshot:"

// imageIDs bounds the ids an image's files may carry: a sandbox's user
// namespace maps 65,536 of them, so a file owned by any other would show
// as nobody inside.
const imageIDs = 1 << 16

// Layers is the content-addressed store of unpacked layers.
type Layers struct {
	root string
	// shared says layers are kept once, in overlay form with the image's
	// own ids, for drivers that id-map them into each sandbox (hutch as
	// root). Otherwise each template is flattened into a tree of its own,
	// owned by hutch's user: overlayfs whiteouts are device nodes, which
	// only root may make, and a sandbox of hutch without root has only
	// hutch's one id.
	shared   bool
	maxBytes int64
}

// layerMeta is what the store keeps beside an unpacked layer.
type layerMeta struct {
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
}

// openLayers makes the store's directories under root.
func openLayers(root string, shared bool, maxBytes int64) (*Layers, error) {
	for _, d := range []string{root, filepath.Join(root, sharedDir), filepath.Join(root, flatDir), filepath.Join(root, snapDir), filepath.Join(root, blobDir), filepath.Join(root, incomingDir)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("layer store: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("layer store: %w", err)
		}
	}
	// Uploads that a crash left half-written are of no use.
	if err := clearDir(filepath.Join(root, incomingDir)); err != nil {
		return nil, err
	}
	return &Layers{root: root, shared: shared, maxBytes: maxBytes}, nil
}

// Shared reports whether layers are kept once and shared.
func (l *Layers) Shared() bool { return l.shared }

// dir is where the layer with diff id is unpacked.
func (l *Layers) dir(diffID string) string {
	return filepath.Join(l.root, sharedDir, strings.TrimPrefix(diffID, "sha256:"))
}

// flat is where the flattened image id is.
func (l *Layers) flat(id string) string { return filepath.Join(l.root, flatDir, id) }

// Dirs returns the host directories of a template's layers, bottom
// first: its flattened tree if it has one, then its layers (shared ones
// by diff id, copies of snapshots by id).
func (l *Layers) Dirs(layers []string, flat string) []string {
	var out []string
	if flat != "" {
		out = append(out, l.flat(flat))
	}
	for _, d := range layers {
		if id, ok := strings.CutPrefix(d, snapPrefix); ok {
			out = append(out, filepath.Join(l.root, snapDir, id))
			continue
		}
		out = append(out, l.dir(d))
	}
	return out
}

// unpackShared unpacks each of img's layers not in the store yet and
// returns the image's size (its layers' file sizes).
func (l *Layers) unpackShared(ctx context.Context, img *image.Image) (int64, error) {
	var total int64
	var below []string // nearest first
	for _, ly := range img.Layers {
		if err := checkDiffID(ly.DiffID); err != nil {
			return 0, err
		}
		dst := l.dir(ly.DiffID)
		meta, err := l.meta(ly.DiffID)
		if errors.Is(err, fs.ErrNotExist) {
			meta, err = l.unpackOne(ctx, ly, dst, below)
		}
		if err != nil {
			return 0, err
		}
		total += meta.Bytes
		below = append([]string{dst}, below...)
	}
	return total, nil
}

// unpackOne unpacks one layer into dst in overlay form.
func (l *Layers) unpackOne(ctx context.Context, ly image.Layer, dst string, below []string) (layerMeta, error) {
	rc, err := ly.Open(ctx)
	if err != nil {
		return layerMeta{}, err
	}
	defer rc.Close()
	st, err := layer.Unpack(ctx, dst, rc, layer.Options{
		Mode: layer.Layer, Lower: below, Owner: layer.Shift(0, 0, imageIDs), MaxBytes: l.maxBytes,
		Digest: ly.Digest, DiffID: ly.DiffID, Zstd: openZstd,
	})
	if errdefs.HasCode(err, layer.CodeExists) {
		// Another import unpacked it first; its record follows at once.
		return l.waitMeta(ly.DiffID)
	}
	if err != nil {
		return layerMeta{}, err
	}
	meta := layerMeta{Bytes: st.Bytes, Files: st.Files}
	if err := writeJSON(dst+".json", meta); err != nil {
		return layerMeta{}, err
	}
	return meta, nil
}

// meta reads what was recorded of an unpacked layer; fs.ErrNotExist when
// the layer is not (wholly) there.
func (l *Layers) meta(diffID string) (layerMeta, error) {
	var m layerMeta
	b, err := os.ReadFile(l.dir(diffID) + ".json")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("layer store: %s: %w", diffID, err)
	}
	return m, nil
}

// waitMeta reads the record of a layer another import just put in place
// (it writes the record right after the rename).
func (l *Layers) waitMeta(diffID string) (layerMeta, error) {
	for range 100 {
		m, err := l.meta(diffID)
		if !errors.Is(err, fs.ErrNotExist) {
			return m, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return layerMeta{}, fmt.Errorf("layer store: layer %s is in place without its record", diffID)
}

// unpackFlat applies every layer of img, bottom first, into one new tree
// and returns its id and size.
func (l *Layers) unpackFlat(ctx context.Context, img *image.Image) (string, int64, error) {
	return l.unpackFlatAs(ctx, img, ids.New())
}

// unpackFlatAs is unpackFlat into the tree id: a template fetched from
// another node keeps the flat id its record names.
func (l *Layers) unpackFlatAs(ctx context.Context, img *image.Image, id string) (_ string, _ int64, retErr error) {
	if !ids.Valid(id) {
		return "", 0, errdefs.Invalid("image_invalid", "flattened image id %q is not an id", id)
	}
	dst := l.flat(id)
	tmp := filepath.Join(l.root, flatDir, ".partial-"+id)
	// What a crash left of an earlier try at the same id (a fetch's).
	if err := layer.RemoveAll(tmp); err != nil {
		return "", 0, err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", 0, fmt.Errorf("layer store: %w", err)
	}
	defer func() {
		if retErr != nil {
			layer.RemoveAll(tmp)
		}
	}()
	var total int64
	for _, ly := range img.Layers {
		rc, err := ly.Open(ctx)
		if err != nil {
			return "", 0, err
		}
		st, err := layer.Apply(ctx, tmp, rc, layer.Options{MaxBytes: l.maxBytes, Digest: ly.Digest, DiffID: ly.DiffID, Zstd: openZstd})
		rc.Close()
		if err != nil {
			return "", 0, err
		}
		total += st.Bytes
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", 0, fmt.Errorf("layer store: %w", err)
	}
	return id, total, nil
}

// collect removes every shared layer and flattened tree that keep does not
// name (diff ids and flat ids), and what a crash left half-made.
func (l *Layers) collect(keep map[string]bool) (removed []string, err error) {
	var errs []error
	for _, sub := range []string{sharedDir, flatDir, snapDir, blobDir} {
		ents, err := os.ReadDir(filepath.Join(l.root, sub))
		if err != nil {
			return removed, fmt.Errorf("layer store: %w", err)
		}
		for _, e := range ents {
			name := e.Name()
			key := name
			switch sub {
			case sharedDir:
				key = "sha256:" + strings.TrimSuffix(name, ".json")
			case snapDir:
				key = snapPrefix + name
			case blobDir:
				key = blobPrefix + "sha256:" + name
			}
			if keep[key] {
				continue
			}
			// A layer goes before its record, so a layer without one is
			// never taken for whole.
			p := filepath.Join(l.root, sub, name)
			if err := layer.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			if e.IsDir() && !strings.HasPrefix(name, ".") {
				removed = append(removed, key)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// removeFlat removes the flattened image id (a missing one is no error).
func (l *Layers) removeFlat(id string) error { return layer.RemoveAll(l.flat(id)) }

// checkDiffID refuses a diff id that is not a sha256 digest: it names a
// directory.
func checkDiffID(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	ok = ok && len(hex) == 64
	for i := 0; ok && i < len(hex); i++ {
		ok = '0' <= hex[i] && hex[i] <= '9' || 'a' <= hex[i] && hex[i] <= 'f'
	}
	if !ok {
		return errdefs.Invalid("image_invalid", "layer diff id %q is not a sha256 digest", d)
	}
	return nil
}

// openZstd opens a zstd-compressed layer.
func openZstd(r io.Reader) (io.ReadCloser, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return d.IOReadCloser(), nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	return nil
}

// clearDir empties dir.
func clearDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("layer store: %w", err)
	}
	for _, e := range ents {
		if err := layer.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
