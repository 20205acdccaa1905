package drivertest

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// busybox is the one program of the suite's image: Debian's
// busybox-static, which needs nothing else of a root.
const busybox = "/bin/busybox"

// imageApplets are linked to busybox in the suite's image.
var imageApplets = []string{"sh", "ls", "cat", "echo", "id", "touch", "mkdir", "rm", "stat", "test", "env", "pwd", "hostname", "sleep", "true", "wc"}

// appUID is the image's own user, the one its config names.
const appUID = 1001

// testImage starts sandboxes from an image (drivers whose capabilities say
// Images): the image's files and none of the host's, its environment,
// working directory and user, its whiteouts applied, a root that is
// writable while the layers stay as they were, sandboxes of one image
// apart from each other, the agent's directory read-only, and the layers
// again after a Stop and Start.
func testImage(t *testing.T, s Suite) {
	d := s.New(t)
	caps := d.Capabilities()
	if !caps.Images {
		t.Skip("the driver starts no sandbox from an image here")
	}
	img := suiteImage(t, caps.SharedLayers)
	layerFiles := countFiles(t, img.Layers)

	sp := spec(api.Limits{})
	sp.Template, sp.Image = "busybox", img
	sb := create(t, d, sp)
	if got := sh(t, sb, "pwd; echo $GREETING; echo $PATH; hostname"); got != "/srv\nhello\n/bin\n"+sb.id+"\n" {
		t.Errorf("pwd, $GREETING, $PATH, hostname = %q; want the image's /srv, hello, /bin and the sandbox's id", got)
	}
	wantUID := "1001"
	if s.RootInside {
		wantUID = "0"
	}
	if got := strings.TrimSpace(sh(t, sb, "id -u")); got != wantUID {
		t.Errorf("commands run as uid %s; want %s, the image's user", got, wantUID)
	}
	// None of the host's system directories.
	if res := run(t, sb, "/bin/sh", "-c", "test -e /usr || test -e /lib || test -e /etc/os-release"); res.ExitCode == 0 {
		t.Errorf("a sandbox from the image sees the host's /usr, /lib or /etc/os-release")
	}
	// The second layer's whiteouts: a file gone, a directory made opaque.
	if got := sh(t, sb, "ls /opt/stuff; test -e /etc/gone.txt && echo still there; true"); got != "b\n" {
		t.Errorf("after the whiteouts, ls /opt/stuff and /etc/gone.txt = %q; want only b", got)
	}
	if got := sh(t, sb, "stat -c '%a' /bin/suid"); strings.TrimSpace(got) != "755" {
		t.Errorf("the image's setuid file has mode %s inside; want 755 (the bit cleared)", got)
	}
	if caps.SharedLayers {
		if got := sh(t, sb, "stat -c '%u:%g' /srv/mine /etc/passwd"); got != "1001:1001\n0:0\n" {
			t.Errorf("owners inside = %q; want the image's own (1001:1001, 0:0)", got)
		}
	}

	// Root inside may change anything of the root but the agent's.
	root := spec(api.Limits{})
	root.Template, root.Image, root.Root = "busybox", img, true
	sbRoot := create(t, d, root)
	sh(t, sbRoot, "echo new > /bin/new && rm /etc/passwd && mkdir -p /usr/local/x && echo changed > /srv/mine")
	if res := run(t, sbRoot, "/bin/sh", "-c", "touch /.hutch/x || touch /.hutch/bin/hutch-agent"); res.ExitCode == 0 {
		t.Errorf("root inside wrote under /.hutch")
	}
	// ... in its own upper layer: the other sandbox and the layers keep
	// the image's files.
	if got := sh(t, sb, "cat /srv/mine; test -e /bin/new && echo leaked; test -e /etc/passwd && echo passwd"); got != "mine\npasswd\n" {
		t.Errorf("the other sandbox of the image sees %q; want its own files", got)
	}
	if n := countFiles(t, img.Layers); n != layerFiles {
		t.Errorf("the layers hold %d files after the sandboxes wrote; want %d, as unpacked", n, layerFiles)
	}

	if !caps.StartStop {
		return
	}
	restart(t, d, sbRoot)
	if got := sh(t, sbRoot, "cat /bin/new /srv/mine; ls /opt/stuff"); got != "new\nchanged\nb\n" {
		t.Errorf("after Stop and Start: %q; want the sandbox's files over the image's", got)
	}
}

// suiteImage unpacks the suite's two-layer image as the driver wants it:
// each layer in overlayfs's form with the image's ids (shared), or both
// flattened into one tree owned by the test's user.
func suiteImage(t *testing.T, shared bool) *driver.Image {
	t.Helper()
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Skipf("the suite's image needs %s (Debian package busybox-static): %v", busybox, err)
	}
	base := tarOf(t, func(w *tar.Writer) {
		for _, d := range []string{"bin", "etc", "srv", "opt", "opt/stuff", "home", "tmp"} {
			writeEntry(t, w, &tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
		}
		writeEntry(t, w, &tar.Header{Name: "home/app/", Typeflag: tar.TypeDir, Mode: 0o750, Uid: appUID, Gid: appUID}, nil)
		writeEntry(t, w, &tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, bb)
		writeEntry(t, w, &tar.Header{Name: "bin/suid", Typeflag: tar.TypeReg, Mode: 0o4755}, []byte("#!/bin/sh\n"))
		for _, a := range imageApplets {
			writeEntry(t, w, &tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
		}
		writeEntry(t, w, &tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644},
			[]byte("root:x:0:0:root:/root:/bin/sh\napp:x:1001:1001:app:/home/app:/bin/sh\n"))
		writeEntry(t, w, &tar.Header{Name: "etc/group", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("root:x:0:\napp:x:1001:\n"))
		writeEntry(t, w, &tar.Header{Name: "etc/gone.txt", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("deleted above\n"))
		writeEntry(t, w, &tar.Header{Name: "opt/stuff/a", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("hidden above\n"))
		writeEntry(t, w, &tar.Header{Name: "srv/mine", Typeflag: tar.TypeReg, Mode: 0o644, Uid: appUID, Gid: appUID}, []byte("mine\n"))
	})
	top := tarOf(t, func(w *tar.Writer) {
		writeEntry(t, w, &tar.Header{Name: "etc/.wh.gone.txt", Typeflag: tar.TypeReg, Mode: 0o644}, nil)
		writeEntry(t, w, &tar.Header{Name: "opt/stuff/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644}, nil)
		writeEntry(t, w, &tar.Header{Name: "opt/stuff/b", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("b\n"))
	})
	store := t.TempDir()
	img := &driver.Image{Shared: shared, Env: []string{"PATH=/bin", "GREETING=hello"}, WorkingDir: "/srv",
		User: driver.ImageUser{Name: "app", UID: appUID, GID: appUID, Home: "/home/app"}}
	ctx := context.Background()
	if !shared {
		flat := filepath.Join(store, "flat")
		for _, l := range [][]byte{base, top} {
			if _, err := layer.Apply(ctx, mkdirOnce(t, flat), bytes.NewReader(l), layer.Options{}); err != nil {
				t.Fatalf("flatten the suite's image: %v", err)
			}
		}
		img.Layers = []string{flat}
		return img
	}
	var below []string
	for i, l := range [][]byte{base, top} {
		dir := filepath.Join(store, string(rune('0'+i)))
		if _, err := layer.Unpack(ctx, dir, bytes.NewReader(l), layer.Options{Mode: layer.Layer, Lower: below, Owner: layer.Shift(0, 0, 1<<16)}); err != nil {
			t.Fatalf("unpack the suite's image: %v", err)
		}
		img.Layers = append(img.Layers, dir)
		below = append([]string{dir}, below...)
	}
	return img
}

func tarOf(t *testing.T, fill func(*tar.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	fill(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeEntry(t *testing.T, w *tar.Writer, h *tar.Header, body []byte) {
	t.Helper()
	h.Size = int64(len(body))
	if err := w.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
}

func mkdirOnce(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// countFiles counts what the layer directories hold.
func countFiles(t *testing.T, dirs []string) int {
	t.Helper()
	n := 0
	for _, d := range dirs {
		if err := filepath.WalkDir(d, func(string, os.DirEntry, error) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
