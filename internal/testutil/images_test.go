package testutil

import (
	"archive/tar"
	"io"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestBusyboxImage reads BusyboxImage's image back: what its first layer
// holds, its config, and a layer above that deletes and makes a
// directory opaque.
func TestBusyboxImage(t *testing.T) {
	opts := BusyboxOpts()
	opts.User = "app"
	opts.Layers = [][]TarEntry{{WhiteoutEntry("etc/group"), OpaqueEntry("srv")}}
	img := BusyboxImage(t, opts)

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != runtime.GOOS || cfg.Architecture != runtime.GOARCH || cfg.Config.User != "app" ||
		cfg.Config.WorkingDir != "/srv" || !slices.Equal(cfg.Config.Env, []string{"PATH=/bin", "GREETING=hello"}) {
		t.Errorf("config = %+v", cfg)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("%d layers", len(layers))
	}
	first := tarNames(t, layers[0].Uncompressed)
	for _, want := range []string{"bin/busybox", "bin/sh", "bin/true", "etc/passwd", "etc/group", "home/app", "srv", "tmp"} {
		if _, ok := first[want]; !ok {
			t.Errorf("the busybox layer has no %s", want)
		}
	}
	if h := first["bin/sh"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
		t.Errorf("bin/sh = %+v", h)
	}
	if h := first["home/app"]; h.Uid != 1001 || h.Gid != 1001 {
		t.Errorf("home/app is owned by %d:%d", h.Uid, h.Gid)
	}
	second := tarNames(t, layers[1].Uncompressed)
	for _, want := range []string{"etc/.wh.group", "srv/.wh..wh..opq"} {
		if _, ok := second[want]; !ok {
			t.Errorf("the second layer has no %s: %v", want, second)
		}
	}

	// The layout writers write what they were given.
	p, err := layout.FromPath(WriteLayout(t, img))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != LayoutName {
		t.Errorf("index.json = %+v", m)
	}
}

// tarNames lists a layer's entries by name.
func tarNames(t *testing.T, open func() (io.ReadCloser, error)) map[string]*tar.Header {
	t.Helper()
	rc, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}
