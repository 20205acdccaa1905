package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// saveEntry is one image of a `docker save` archive's manifest.json.
type saveEntry struct {
	Config       string
	RepoTags     []string
	Layers       []string
	LayerSources map[v1.Hash]v1.Descriptor // foreign layers, by diff ID
}

// openDockerSave opens the image of a `docker save` archive tagged name,
// or its only one. The archive has no manifest: Open derives an OCI one
// from the config and the layer files, so the checks of every other
// source apply. A layer file that is a plain tar (as Docker before 25
// saved them) is described by its diff ID, which is then its digest
// too; a compressed one (as go-containerregistry saves them) is hashed
// once, here.
func openDockerSave(ctx context.Context, fsys fs.FS, tag string, want v1.Platform) (*Image, error) {
	b, err := readFile(fsys, "manifest.json", MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	var entries []saveEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the archive's manifest.json is not valid")
	}
	e, err := pickSaved(entries, tag)
	if err != nil {
		return nil, err
	}
	if len(e.Layers) > MaxLayers {
		return nil, errdefs.Invalid(CodeInvalid, "the image has %d layers, more than the %d hutch takes", len(e.Layers), MaxLayers)
	}
	cfgPath, err := entryName(e.Config)
	if err != nil {
		return nil, err
	}
	cfgRaw, err := readFile(fsys, cfgPath, MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []v1.Hash `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(cfgRaw, &cfg); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image's config is not valid")
	}
	if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
		return nil, errdefs.Invalid(CodeInvalid, "the image's config lists %d layers and the archive %d", len(cfg.RootFS.DiffIDs), len(e.Layers))
	}

	st := &fsStore{fsys: fsys, paths: map[v1.Hash]string{}, mem: map[v1.Hash][]byte{}}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(cfgRaw)), Digest: digestOf(cfgRaw)},
		Layers:        make([]v1.Descriptor, len(e.Layers)),
	}
	st.mem[m.Config.Digest] = cfgRaw
	for i, p := range e.Layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lp, err := entryName(p)
		if err != nil {
			return nil, err
		}
		d, err := describeLayer(fsys, lp, cfg.RootFS.DiffIDs[i])
		if errors.Is(err, fs.ErrNotExist) {
			if _, foreign := e.LayerSources[cfg.RootFS.DiffIDs[i]]; foreign {
				return nil, errdefs.Invalid(CodeInvalid, "layer %d is a foreign (non-distributable) layer the archive does not hold; hutch does not fetch it from elsewhere", i)
			}
		}
		if err != nil {
			return nil, sourceError(lp, err)
		}
		st.paths[d.Digest] = lp
		m.Layers[i] = d
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	d := v1.Descriptor{MediaType: m.MediaType, Size: int64(len(mb)), Digest: digestOf(mb)}
	st.mem[d.Digest] = mb
	return resolve(ctx, st, d, mb, want)
}

// pickSaved picks the archive's image tagged tag, or its only one.
func pickSaved(entries []saveEntry, tag string) (saveEntry, error) {
	var tags []string
	for _, e := range entries {
		tags = append(tags, e.RepoTags...)
	}
	slices.Sort(tags)
	if tag == "" {
		switch len(entries) {
		case 0:
			return saveEntry{}, errdefs.Invalid(CodeInvalid, "the archive holds no image")
		case 1:
			return entries[0], nil
		}
		return saveEntry{}, errdefs.Invalid(CodeInvalid, "the archive holds %d images; name one (%s)", len(entries), listOrNone(tags))
	}
	for _, e := range entries {
		for _, t := range e.RepoTags {
			if sameTag(t, tag) {
				return e, nil
			}
		}
	}
	return saveEntry{}, errdefs.New(errdefs.ErrNotFound, CodeNotFound, "the archive has no image tagged %q; it has %s", tag, listOrNone(tags))
}

// sameTag reports whether two tags name the same image: "busybox" is
// "docker.io/library/busybox:latest".
func sameTag(a, b string) bool {
	if a == b {
		return true
	}
	ta, errA := name.NewTag(a)
	tb, errB := name.NewTag(b)
	return errA == nil && errB == nil && ta.Name() == tb.Name()
}

// describeLayer describes the layer file at p, whose diff ID the config
// gives.
func describeLayer(fsys fs.FS, p string, diffID v1.Hash) (v1.Descriptor, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return v1.Descriptor{}, err
	}
	defer f.Close()
	var magic [4]byte
	n, err := io.ReadFull(f, magic[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return v1.Descriptor{}, err
	}
	if !isCompressed(magic[:n]) {
		fi, err := f.Stat()
		if err != nil {
			return v1.Descriptor{}, err
		}
		return v1.Descriptor{MediaType: types.OCIUncompressedLayer, Size: fi.Size(), Digest: diffID}, nil
	}
	mt := types.OCILayer
	if magic[0] == 0x28 {
		mt = types.OCILayerZStd
	}
	h := sha256.New()
	h.Write(magic[:n])
	size, err := io.Copy(h, f)
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{
		MediaType: mt,
		Size:      size + int64(n),
		Digest:    v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))},
	}, nil
}

func digestOf(b []byte) v1.Hash {
	sum := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}
