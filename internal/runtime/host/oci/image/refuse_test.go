package image_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/testutil"
)

// tiny is an OCI image for the host's platform with config cfg and one
// small layer per name in files.
func tiny(t testing.TB, cfg v1.Config, files ...string) v1.Image {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{OS: runtime.GOOS, Architecture: runtime.GOARCH, Config: cfg, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	var layers []v1.Layer
	for _, f := range files {
		layers = append(layers, testutil.Layer(t, testutil.FileEntry(f, f+"\n", 0o644)))
	}
	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		t.Fatal(err)
	}
	return img
}

// blobPath is where a layout keeps the blob h.
func blobPath(dir string, h v1.Hash) string {
	return filepath.Join(dir, "blobs", h.Algorithm, h.Hex)
}

// TestRefused opens images hutch must not take; each is refused with
// image_invalid and a message that says why.
func TestRefused(t *testing.T) {
	names := make([]string, image.MaxLayers+1)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
	}
	withLayer := func(t *testing.T, mt types.MediaType) v1.Image {
		img, err := mutate.Append(tiny(t, v1.Config{}, "a"), mutate.Addendum{
			Layer:     testutil.Layer(t, testutil.FileEntry("b", "b", 0o644)),
			MediaType: mt,
		})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string // a layout
		says string
	}{
		{"an artifact", func(t *testing.T) string {
			return testutil.WriteLayout(t, mutate.ConfigMediaType(tiny(t, v1.Config{}, "a"), "application/vnd.cncf.helm.config.v1+json"))
		}, "not a container image"},
		{"too many layers", func(t *testing.T) string {
			return testutil.WriteLayout(t, tiny(t, v1.Config{}, names...))
		}, "129 layers"},
		{"a config over 1 MiB", func(t *testing.T) string {
			return testutil.WriteLayout(t, tiny(t, v1.Config{Env: []string{"BIG=" + strings.Repeat("x", image.MaxConfigBytes)}}, "a"))
		}, "config is"},
		{"a layer that is no layer", func(t *testing.T) string {
			return testutil.WriteLayout(t, withLayer(t, "application/vnd.in-toto+json"))
		}, "not an image layer"},
		{"a foreign layer without its blob", func(t *testing.T) string {
			img := withLayer(t, types.OCIRestrictedLayer)
			dir := testutil.WriteLayout(t, img)
			ls, _ := img.Layers()
			d, _ := ls[1].Digest()
			if err := os.Remove(blobPath(dir, d)); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "foreign"},
		{"a config that does not match its digest", func(t *testing.T) string {
			img := tiny(t, v1.Config{Env: []string{"A=1"}}, "a")
			dir := testutil.WriteLayout(t, img)
			cfg, _ := img.ConfigName()
			b, err := os.ReadFile(blobPath(dir, cfg))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "A=1", "A=2", 1))
			if err := os.WriteFile(blobPath(dir, cfg), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "does not match its digest"},
		{"a blob symlinked out of the layout", func(t *testing.T) string {
			img := tiny(t, v1.Config{}, "a")
			dir := testutil.WriteLayout(t, img)
			cfg, _ := img.ConfigName()
			outside := filepath.Join(t.TempDir(), "config")
			if err := os.Rename(blobPath(dir, cfg), outside); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, blobPath(dir, cfg)); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "cannot be read"},
		{"a schema 1 manifest", func(t *testing.T) string {
			return layoutOf(t, types.DockerManifestSchema1Signed, `{"schemaVersion":1,"name":"x","tag":"y","fsLayers":[]}`)
		}, "schema 1"},
		{"a manifest that contradicts its descriptor", func(t *testing.T) string {
			return layoutOf(t, types.OCIManifestSchema1, `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`)
		}, "where its descriptor says"},
		{"an empty layout", func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "layout")
			if _, err := layout.Write(dir, empty.Index); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "no image"},
		{"a FIFO for index.json", func(t *testing.T) string {
			dir := t.TempDir()
			if err := syscall.Mkfifo(filepath.Join(dir, "index.json"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "neither"},
		{"garbage index.json", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := image.Open(context.Background(), image.Source{Path: tc.dir(t)})
			wantCode(t, err, image.CodeInvalid)
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("the error does not say %q: %v", tc.says, err)
			}
		})
	}
}

// TestForeignLayerPresent takes a non-distributable layer whose blob the
// layout holds.
func TestForeignLayerPresent(t *testing.T) {
	img, err := mutate.Append(tiny(t, v1.Config{}, "a"), mutate.Addendum{
		Layer:     testutil.Layer(t, testutil.FileEntry("b", "b", 0o644)),
		MediaType: types.OCIRestrictedLayer,
		URLs:      []string{"https://203.0.113.1/never-fetched"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.WriteLayout(t, img)
	ls, _ := img.Layers()
	d, _ := ls[1].Digest()
	if _, err := os.Stat(blobPath(dir, d)); err != nil {
		t.Skipf("go-containerregistry's layout did not write the foreign layer's blob: %v", err)
	}
	got := open(t, image.Source{Path: dir})
	if got.Layers[1].MediaType != string(types.OCIRestrictedLayer) {
		t.Errorf("layer 1 is a %s", got.Layers[1].MediaType)
	}
	checkBlob(t, got.Layers[1])
}

// layoutOf writes a layout whose one entry is body, described as mt.
func layoutOf(t *testing.T, mt types.MediaType, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	h, size, err := v1.SHA256(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteBlob(h, nopCloser{strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendDescriptor(v1.Descriptor{MediaType: mt, Size: size, Digest: h}); err != nil {
		t.Fatal(err)
	}
	return dir
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
