package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// store is where one source keeps an image's manifests and blobs. What
// it returns is unchecked: resolve checks digests and sizes itself.
// Errors a store returns are already classified.
type store interface {
	// manifest reads the manifest or index d names, at most limit bytes
	// (more is an error).
	manifest(ctx context.Context, d v1.Descriptor, limit int64) ([]byte, error)
	// blob reads the blob d names whole, at most limit bytes.
	blob(ctx context.Context, d v1.Descriptor, limit int64) ([]byte, error)
	// open opens the blob d names for reading.
	open(ctx context.Context, d v1.Descriptor) (io.ReadCloser, error)
	// has reports whether the store holds the blob d names.
	has(ctx context.Context, d v1.Descriptor) (bool, error)
}

// maxDepth bounds how deep indexes may nest (index.json → index → …).
const maxDepth = 4

// resolve follows d (and its bytes, already read and checked, or nil to
// read them) through indexes to the manifest for want, then reads and
// checks that image.
func resolve(ctx context.Context, st store, d v1.Descriptor, body []byte, want v1.Platform) (*Image, error) {
	for depth := 0; ; depth++ {
		if body == nil {
			b, err := readChecked(ctx, st.manifest, d, MaxManifestBytes, "manifest")
			if err != nil {
				return nil, err
			}
			body = b
		}
		mt, err := manifestType(d.MediaType, body)
		if err != nil {
			return nil, err
		}
		switch {
		case mt.IsImage():
			return build(ctx, st, d, mt, body, want)
		case !mt.IsIndex():
			return nil, errdefs.Invalid(CodeInvalid, "the manifest's type %s is not an image manifest or index", mt)
		case depth == maxDepth:
			return nil, errdefs.Invalid(CodeInvalid, "the image's indexes nest more than %d deep", maxDepth)
		}
		var idx v1.IndexManifest
		if err := json.Unmarshal(body, &idx); err != nil {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image index %s is not valid JSON", d.Digest)
		}
		if d, err = pick(&idx, want); err != nil {
			return nil, err
		}
		body = nil
	}
}

// manifestType reconciles the type a descriptor (or a registry's
// Content-Type) gives a manifest with the one it declares itself, and
// guesses it from the content when neither says: OCI lets a manifest
// leave out its mediaType. A manifest that says one thing where its
// descriptor says another is refused, as the image spec asks.
func manifestType(outer types.MediaType, body []byte) (types.MediaType, error) {
	var probe struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     types.MediaType `json:"mediaType"`
		Manifests     json.RawMessage `json:"manifests"`
		Config        json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return "", errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image's manifest is not valid JSON")
	}
	if probe.SchemaVersion == 1 || outer.IsSchema1() || probe.MediaType.IsSchema1() {
		return "", errdefs.Invalid(CodeInvalid, "the image has a Docker schema 1 manifest, which hutch does not read; push it again with a current tool")
	}
	known := func(m types.MediaType) bool { return m.IsImage() || m.IsIndex() }
	inner := probe.MediaType
	switch {
	case known(outer) && inner != "" && inner != outer:
		return "", errdefs.Invalid(CodeInvalid, "the image's manifest says it is a %s where its descriptor says %s", inner, outer)
	case known(outer):
		return outer, nil
	case inner != "":
		return inner, nil
	case probe.Manifests != nil:
		return types.OCIImageIndex, nil
	case probe.Config != nil:
		return types.OCIManifestSchema1, nil
	}
	return "", errdefs.Invalid(CodeInvalid, "the manifest is neither an image manifest nor an index")
}

// build reads the image manifest body describes: it checks the manifest,
// reads and checks the config, and lists the layers.
func build(ctx context.Context, st store, d v1.Descriptor, mt types.MediaType, body []byte, want v1.Platform) (*Image, error) {
	var m v1.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image manifest %s is not valid", d.Digest)
	}
	if m.SchemaVersion != 2 {
		return nil, errdefs.Invalid(CodeInvalid, "the image manifest has schemaVersion %d, not 2", m.SchemaVersion)
	}
	if !m.Config.MediaType.IsConfig() {
		return nil, errdefs.Invalid(CodeInvalid, "the manifest is not a container image's: its config is a %s", m.Config.MediaType)
	}
	if len(m.Layers) > MaxLayers {
		return nil, errdefs.Invalid(CodeInvalid, "the image has %d layers, more than the %d hutch takes", len(m.Layers), MaxLayers)
	}
	if m.Config.Size > MaxConfigBytes {
		return nil, errdefs.Invalid(CodeInvalid, "the image's config is %d bytes, more than the %d hutch takes", m.Config.Size, MaxConfigBytes)
	}
	for i, l := range m.Layers {
		if !l.MediaType.IsLayer() {
			return nil, errdefs.Invalid(CodeInvalid, "layer %d is a %s, not an image layer", i, l.MediaType)
		}
		if err := checkDigest(l, "layer"); err != nil {
			return nil, err
		}
		if l.Size < 0 {
			return nil, errdefs.Invalid(CodeInvalid, "layer %d has a negative size", i)
		}
		if l.MediaType.IsDistributable() {
			continue
		}
		ok, err := st.has(ctx, l)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errdefs.Invalid(CodeInvalid, "layer %d is a foreign (non-distributable) layer the source does not hold; hutch does not fetch it from elsewhere", i)
		}
	}

	raw, err := readChecked(ctx, st.blob, m.Config, MaxConfigBytes, "config")
	if err != nil {
		return nil, err
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the image's config is not valid")
	}
	if cfg.RootFS.Type != "layers" {
		return nil, errdefs.Invalid(CodeInvalid, "the image's config has rootfs type %q, not \"layers\"", cfg.RootFS.Type)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, errdefs.Invalid(CodeInvalid, "the image's config lists %d layers and its manifest %d", len(cfg.RootFS.DiffIDs), len(m.Layers))
	}
	if err := checkPlatform(cfg, want); err != nil {
		return nil, err
	}

	img := &Image{
		Digest: d.Digest.String(),
		Config: Config{
			Env:          cfg.Config.Env,
			WorkingDir:   cfg.Config.WorkingDir,
			User:         cfg.Config.User,
			Entrypoint:   cfg.Config.Entrypoint,
			Cmd:          cfg.Config.Cmd,
			Architecture: cfg.Architecture,
			OS:           cfg.OS,
		},
		Layers: make([]Layer, len(m.Layers)),
	}
	for i, l := range m.Layers {
		diffID := cfg.RootFS.DiffIDs[i]
		if diffID.Algorithm != "sha256" {
			return nil, errdefs.Invalid(CodeInvalid, "layer %d's diff_id %s is not a sha256 digest", i, diffID)
		}
		img.Layers[i] = Layer{
			Digest:    l.Digest.String(),
			DiffID:    diffID.String(),
			Size:      l.Size,
			MediaType: string(l.MediaType),
			Open: func(ctx context.Context) (io.ReadCloser, error) {
				rc, err := st.open(ctx, l)
				if err != nil {
					return nil, err
				}
				return &bounded{rc: rc, left: l.Size}, nil
			},
		}
	}
	return img, nil
}

// checkDigest refuses a descriptor whose digest is not sha256, the one
// algorithm hutch checks layers with.
func checkDigest(d v1.Descriptor, what string) error {
	if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != sha256.Size*2 {
		return errdefs.Invalid(CodeInvalid, "the image's %s has digest %q; hutch takes sha256 digests only", what, d.Digest)
	}
	return nil
}

// readChecked reads what d names with read, at most limit bytes, and
// checks its size and digest.
func readChecked(ctx context.Context, read func(context.Context, v1.Descriptor, int64) ([]byte, error), d v1.Descriptor, limit int64, what string) ([]byte, error) {
	if err := checkDigest(d, what); err != nil {
		return nil, err
	}
	if d.Size > limit {
		return nil, errdefs.Invalid(CodeInvalid, "the image's %s is %d bytes, more than the %d hutch takes", what, d.Size, limit)
	}
	b, err := read(ctx, d, limit)
	if err != nil {
		return nil, err
	}
	if err := verify(d, b, what); err != nil {
		return nil, err
	}
	return b, nil
}

// verify checks b against d's size and digest.
func verify(d v1.Descriptor, b []byte, what string) error {
	sum := sha256.Sum256(b)
	if int64(len(b)) != d.Size || hex.EncodeToString(sum[:]) != d.Digest.Hex {
		return errdefs.New(errdefs.ErrInvalid, CodeInvalid, "the image's %s does not match its digest %s", what, d.Digest)
	}
	return nil
}

// readAtMost reads r whole, failing when it holds more than limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooBig
	}
	return b, nil
}

var errTooBig = errors.New("more bytes than its descriptor says")

// bounded is a layer's reader: it fails rather than read more than the
// descriptor's size, so a source that sends a blob without end (empty
// gzip members, say, that decompress to nothing) cannot keep a caller
// reading. Fewer bytes are the caller's digest check to catch.
type bounded struct {
	rc   io.ReadCloser
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Read one byte past the end: none must be there.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("image: the layer blob has %w", errTooBig)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *bounded) Close() error { return b.rc.Close() }
