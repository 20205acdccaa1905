package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/testutil"
)

// layered is busybox with a user and a working directory of its own, a
// layer that deletes a file with a whiteout, and one with an opaque
// directory: the images other packages build to test unpacking.
func layered(t *testing.T) (v1.Image, image.Config) {
	opts := testutil.BusyboxOpts()
	opts.User = "app"
	opts.WorkingDir = "/home/app"
	opts.Env = append(opts.Env, "MODE=test")
	opts.Entrypoint = []string{"/bin/sh", "-c"}
	opts.Cmd = []string{"echo $GREETING"}
	opts.Layers = [][]testutil.TarEntry{
		{testutil.WhiteoutEntry("etc/group"), testutil.DirEntry("srv/data", 0o755), testutil.FileEntry("srv/data/a", "a\n", 0o644)},
		{testutil.DirEntry("srv/data", 0o755), testutil.OpaqueEntry("srv/data"), testutil.FileEntry("srv/data/b", "b\n", 0o644)},
	}
	return testutil.BusyboxImage(t, opts), image.Config{
		Env:          []string{"PATH=/bin", "GREETING=hello", "MODE=test"},
		WorkingDir:   "/home/app",
		User:         "app",
		Entrypoint:   []string{"/bin/sh", "-c"},
		Cmd:          []string{"echo $GREETING"},
		Architecture: runtime.GOARCH,
		OS:           runtime.GOOS,
	}
}

// open opens src, failing t on an error, and closes the image on t's
// cleanup.
func open(t *testing.T, src image.Source) *image.Image {
	t.Helper()
	img, err := image.Open(context.Background(), src)
	if err != nil {
		t.Fatalf("Open(%+v): %v", src, err)
	}
	t.Cleanup(func() {
		if err := img.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return img
}

// wantCode fails t unless err is an errdefs error with code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !errdefs.HasCode(err, code) {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

// checkLayers checks that got lists want's layers, and that each
// layer's Open gives bytes that hash to its Digest and, decompressed,
// to its DiffID.
func checkLayers(t *testing.T, got *image.Image, want v1.Image) {
	t.Helper()
	ls, err := want.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Layers) != len(ls) {
		t.Fatalf("%d layers, want %d", len(got.Layers), len(ls))
	}
	for i, l := range ls {
		d, _ := l.Digest()
		diff, _ := l.DiffID()
		size, _ := l.Size()
		mt, _ := l.MediaType()
		g := got.Layers[i]
		if g.Digest != d.String() || g.DiffID != diff.String() || g.Size != size || g.MediaType != string(mt) {
			t.Errorf("layer %d = %s %s %d %s, want %s %s %d %s", i, g.Digest, g.DiffID, g.Size, g.MediaType, d, diff, size, mt)
		}
		checkBlob(t, g)
	}
}

// checkBlob reads a layer through Open and checks its digests.
func checkBlob(t *testing.T, l image.Layer) {
	t.Helper()
	rc, err := l.Open(context.Background())
	if err != nil {
		t.Fatalf("layer %s: Open: %v", l.Digest, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("layer %s: read: %v", l.Digest, err)
	}
	if got := digest(b); got != l.Digest || int64(len(b)) != l.Size {
		t.Errorf("layer %s: read %d bytes hashing to %s, want %d", l.Digest, len(b), got, l.Size)
	}
	raw := b
	if strings.HasSuffix(l.MediaType, "+gzip") || strings.HasSuffix(l.MediaType, ".gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if got := digest(raw); got != l.DiffID {
		t.Errorf("layer %s: uncompressed hashes to %s, want DiffID %s", l.Digest, got, l.DiffID)
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func digestOf(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// TestOpenSources opens one image from a layout directory, a tar of it
// and a docker save archive, and finds the same config and layers in
// each, with layer blobs that hash to their digests.
func TestOpenSources(t *testing.T) {
	img, cfg := layered(t)
	for _, tc := range []struct {
		name       string
		path       string
		sameDigest bool // a docker save archive has no manifest of its own
	}{
		{"layout dir", testutil.WriteLayout(t, img), true},
		{"layout tar", testutil.WriteLayoutTar(t, img), true},
		{"docker save", testutil.WriteDockerSave(t, img, "example.com/hutch/busybox:1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := open(t, image.Source{Path: tc.path})
			if diff := cmp.Diff(cfg, got.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if got.Ref != tc.path {
				t.Errorf("Ref = %q, want %q", got.Ref, tc.path)
			}
			if tc.sameDigest && got.Digest != digestOf(t, img) {
				t.Errorf("Digest = %s, want %s", got.Digest, digestOf(t, img))
			}
			if !strings.HasPrefix(got.Digest, "sha256:") || len(got.Digest) != 71 {
				t.Errorf("Digest = %q", got.Digest)
			}
			if again := open(t, image.Source{Path: tc.path}); again.Digest != got.Digest {
				t.Errorf("a second Open says %s, the first %s", again.Digest, got.Digest)
			}
			checkLayers(t, got, img)
		})
	}
}

// TestBusyboxLayout checks the helper's image: one layer, its config.
func TestBusyboxLayout(t *testing.T) {
	got := open(t, image.Source{Path: testutil.BusyboxLayout(t)})
	want := image.Config{Env: []string{"PATH=/bin", "GREETING=hello"}, WorkingDir: "/srv", Architecture: runtime.GOARCH, OS: runtime.GOOS}
	if diff := cmp.Diff(want, got.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if len(got.Layers) != 1 || got.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("layers = %+v", got.Layers)
	}
	checkBlob(t, got.Layers[0])
}

// TestLegacyDockerSave opens an archive as Docker before 25 saved them:
// plain layer tars in directories, one a symlink to another, the config
// named by its hex. Such a layer's digest is its diff ID.
func TestLegacyDockerSave(t *testing.T) {
	layerTar := tarBytes(t, entry{name: "hello", body: "hello\n"})
	diffID := digest(layerTar)
	cfg := fmt.Sprintf(`{"architecture":%q,"os":%q,"config":{"Env":["A=1"],"WorkingDir":"/w"},"rootfs":{"type":"layers","diff_ids":[%q,%q]}}`,
		runtime.GOARCH, runtime.GOOS, diffID, diffID)
	cfgName := strings.TrimPrefix(digest([]byte(cfg)), "sha256:") + ".json"
	manifest := fmt.Sprintf(`[{"Config":%q,"RepoTags":["hello:latest"],"Layers":["aaa/layer.tar","bbb/layer.tar"]}]`, cfgName)
	path := writeTar(t,
		entry{name: "aaa/", typ: tar.TypeDir},
		entry{name: "aaa/layer.tar", body: string(layerTar)},
		entry{name: "bbb/", typ: tar.TypeDir},
		entry{name: "bbb/layer.tar", typ: tar.TypeSymlink, link: "../aaa/layer.tar"},
		entry{name: cfgName, body: cfg},
		entry{name: "manifest.json", body: manifest},
	)
	got := open(t, image.Source{Path: path, Name: "hello"}) // docker.io/library/hello:latest
	if got.Config.WorkingDir != "/w" || len(got.Config.Env) != 1 {
		t.Errorf("config = %+v", got.Config)
	}
	if len(got.Layers) != 2 {
		t.Fatalf("%d layers", len(got.Layers))
	}
	for _, l := range got.Layers {
		if l.Digest != diffID || l.DiffID != diffID || l.MediaType != "application/vnd.oci.image.layer.v1.tar" || l.Size != int64(len(layerTar)) {
			t.Errorf("layer = %+v", l)
		}
		checkBlob(t, l)
	}
}

// TestDockerSaveTags picks an image of a two-image archive by tag.
func TestDockerSaveTags(t *testing.T) {
	one := testutil.BusyboxImage(t, image1Opts("one"))
	two := testutil.BusyboxImage(t, image1Opts("two"))
	path := filepath.Join(t.TempDir(), "two.tar")
	if err := tarball.MultiWriteToFile(path, map[name.Tag]v1.Image{
		name.MustParseReference("hutch/one:1").(name.Tag): one,
		name.MustParseReference("hutch/two:2").(name.Tag): two,
	}); err != nil {
		t.Fatal(err)
	}
	got := open(t, image.Source{Path: path, Name: "hutch/two:2"})
	if got.Config.Env[0] != "WHICH=two" {
		t.Errorf("picked %v", got.Config.Env)
	}
	if got.Ref != path+":hutch/two:2" {
		t.Errorf("Ref = %q", got.Ref)
	}
	_, err := image.Open(context.Background(), image.Source{Path: path})
	wantCode(t, err, image.CodeInvalid)
	if !strings.Contains(err.Error(), "hutch/one:1, hutch/two:2") {
		t.Errorf("the error does not list the tags: %v", err)
	}
	_, err = image.Open(context.Background(), image.Source{Path: path, Name: "hutch/three:3"})
	wantCode(t, err, image.CodeNotFound)
}

func image1Opts(which string) testutil.ImageOpts {
	return testutil.ImageOpts{Env: []string{"WHICH=" + which}}
}

// TestLayoutNames picks an image of a two-image layout by its
// ref.name annotation.
func TestLayoutNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"one", "two"} {
		img := testutil.BusyboxImage(t, image1Opts(n))
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": n})); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"one", "two"} {
		got := open(t, image.Source{Path: dir, Name: n})
		if got.Config.Env[0] != "WHICH="+n {
			t.Errorf("Name %s picked %v", n, got.Config.Env)
		}
	}
	_, err = image.Open(context.Background(), image.Source{Path: dir})
	wantCode(t, err, image.CodeInvalid)
	if !strings.Contains(err.Error(), "one, two") {
		t.Errorf("the error does not list the names: %v", err)
	}
	_, err = image.Open(context.Background(), image.Source{Path: dir, Name: "three"})
	wantCode(t, err, image.CodeNotFound)
}

// TestDockerLayout opens a layout as Docker 25 and later save one: the
// image listed once per tag, each entry with its tag as ref.name and the
// full reference as io.containerd.image.name.
func TestDockerLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img := testutil.BusyboxImage(t, image1Opts("docker"))
	for _, tag := range []string{"latest", "1"} {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
			"io.containerd.image.name":          "docker.io/library/busybox:" + tag,
		})); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"", "1", "busybox:1", "docker.io/library/busybox:latest", "busybox"} {
		if got := open(t, image.Source{Path: dir, Name: n}); got.Digest != digestOf(t, img) {
			t.Errorf("Name %q: Digest %s", n, got.Digest)
		}
	}
	_, err = image.Open(context.Background(), image.Source{Path: dir, Name: "busybox:2"})
	wantCode(t, err, image.CodeNotFound)
}

// platformIndex is an index of two images, for linux/amd64 and
// linux/arm64, told apart by their config.
func platformIndex(t *testing.T) v1.ImageIndex {
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img := testutil.BusyboxImage(t, testutil.ImageOpts{Env: []string{"ARCH=" + arch}, Platform: "linux/" + arch})
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// checkPlatforms opens src for each platform and checks the pick.
func checkPlatforms(t *testing.T, src image.Source) {
	t.Helper()
	for _, arch := range []string{"amd64", "arm64"} {
		src.Platform = "linux/" + arch
		got := open(t, src)
		if got.Config.Architecture != arch || got.Config.Env[0] != "ARCH="+arch {
			t.Errorf("Platform %s picked %s %v", src.Platform, got.Config.Architecture, got.Config.Env)
		}
	}
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		src.Platform = ""
		if got := open(t, src); got.Config.Architecture != runtime.GOARCH {
			t.Errorf("the default platform picked %s", got.Config.Architecture)
		}
	}
	src.Platform = "linux/s390x"
	_, err := image.Open(context.Background(), src)
	wantCode(t, err, image.CodePlatform)
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Errorf("the error does not list the platforms: %v", err)
	}
}

// TestPlatforms picks by platform from an index in a layout, and from
// an index.json that is itself the index.
func TestPlatforms(t *testing.T) {
	idx := platformIndex(t)
	t.Run("nested index", func(t *testing.T) {
		checkPlatforms(t, image.Source{Path: testutil.WriteIndexLayout(t, idx)})
	})
	t.Run("index.json", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "layout")
		if _, err := layout.Write(dir, idx); err != nil {
			t.Fatal(err)
		}
		checkPlatforms(t, image.Source{Path: dir})
	})
	t.Run("one image", func(t *testing.T) {
		dir := testutil.WriteLayout(t, testutil.BusyboxImage(t, testutil.ImageOpts{Platform: "linux/arm64"}))
		open(t, image.Source{Path: dir, Platform: "linux/arm64/v8"})
		_, err := image.Open(context.Background(), image.Source{Path: dir, Platform: "linux/amd64"})
		wantCode(t, err, image.CodePlatform)
	})
}

// TestSources refuses sources that say too much or too little.
func TestSources(t *testing.T) {
	dir := testutil.BusyboxLayout(t)
	for _, tc := range []struct {
		src  image.Source
		code string
	}{
		{image.Source{}, image.CodeInvalid},
		{image.Source{Ref: "busybox", Path: dir}, image.CodeInvalid},
		{image.Source{Ref: "busybox", Name: "latest"}, image.CodeInvalid},
		{image.Source{Ref: "UPPER/case:x"}, image.CodeInvalid},
		{image.Source{Path: dir, Platform: "linux"}, image.CodeInvalid},
		{image.Source{Path: dir, Platform: "linux/amd64/v1/x"}, image.CodeInvalid},
		{image.Source{Path: filepath.Join(dir, "nothing")}, image.CodeNotFound},
		{image.Source{Path: filepath.Join(dir, "blobs")}, image.CodeInvalid}, // a directory, not a layout
		{image.Source{Path: dir, Name: "other"}, image.CodeNotFound},
	} {
		_, err := image.Open(context.Background(), tc.src)
		if !errdefs.HasCode(err, tc.code) {
			t.Errorf("Open(%+v) = %v, want code %s", tc.src, err, tc.code)
		}
	}
}

// TestClose: a layer reader opened before Close reads on; Layer.Open
// after Close fails.
func TestClose(t *testing.T) {
	for _, path := range []string{testutil.BusyboxLayout(t), testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, testutil.BusyboxOpts()))} {
		img, err := image.Open(context.Background(), image.Source{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		l := img.Layers[0]
		rc, err := l.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := img.Close(); err != nil {
			t.Fatal(err)
		}
		if err := img.Close(); err != nil {
			t.Fatalf("a second Close: %v", err)
		}
		b, err := io.ReadAll(rc)
		if err != nil || digest(b) != l.Digest {
			t.Errorf("%s: after Close, the open reader read %d bytes, %v", path, len(b), err)
		}
		rc.Close()
		if rc, err := l.Open(context.Background()); err == nil {
			rc.Close()
			t.Errorf("%s: Layer.Open after Close succeeded", path)
		}
	}
}

// TestLayerReaderBounded: a blob longer than its descriptor says is not
// read past the size.
func TestLayerReaderBounded(t *testing.T) {
	img := testutil.BusyboxImage(t, testutil.BusyboxOpts())
	dir := testutil.WriteLayout(t, img)
	ls, _ := img.Layers()
	d, _ := ls[0].Digest()
	blob := filepath.Join(dir, "blobs", "sha256", d.Hex)
	f, err := os.OpenFile(blob, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more")
	f.Close()
	got := open(t, image.Source{Path: dir})
	rc, err := got.Layers[0].Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err == nil {
		t.Fatalf("read %d bytes of a blob %d long without an error", len(b), got.Layers[0].Size)
	}
}

// entry is one entry of a tar the tests write by hand.
type entry struct {
	name, body, link string
	typ              byte
}

func tarBytes(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: 0o644}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTar(t *testing.T, entries ...entry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "archive.tar")
	if err := os.WriteFile(p, tarBytes(t, entries...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
