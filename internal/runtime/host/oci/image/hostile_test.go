package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/testutil"
)

// entriesOf reads a tar's entries back.
func entriesOf(t testing.TB, b []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{name: hdr.Name, body: string(body), link: hdr.Linkname, typ: hdr.Typeflag})
	}
}

// layoutTarBytes is a valid OCI layout tar of a small image.
func layoutTarBytes(t testing.TB, img v1.Image) []byte {
	t.Helper()
	b, err := os.ReadFile(testutil.WriteLayoutTar(t, img))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostileArchives opens layout tars that are valid but for one
// entry that names something outside the archive (or otherwise has no
// place in one). Each is refused as a whole, and nothing is written:
// not beside the archive, not above it, not in TMPDIR.
func TestHostileArchives(t *testing.T) {
	valid := layoutTarBytes(t, tiny(t, v1.Config{}, "a"))
	with := func(e entry) []byte {
		t.Helper()
		return tarBytes(t, append([]entry{e}, entriesOf(t, valid)...)...)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(valid)
	zw.Close()
	sparse := testutil.SparseTar(testutil.SparseFile{Name: "index.json", Size: 1 << 20, Frags: []testutil.Fragment{{Off: 0, Data: "{}"}}}).Bytes()

	for _, tc := range []struct {
		name string
		tar  []byte
		says string
	}{
		{"dot-dot", with(entry{name: "../x", body: "escaped"}), `name with ".."`},
		{"dot-dot inside", with(entry{name: "blobs/../../x", body: "escaped"}), `name with ".."`},
		{"dot-slash dot-dot", with(entry{name: "./../x", body: "escaped"}), `name with ".."`},
		{"absolute", with(entry{name: "/x", body: "escaped"}), "absolute name"},
		{"absolute index.json", tarBytes(t, append(entriesOf(t, valid), entry{name: "/index.json", body: "{}"})...), "absolute name"},
		{"symlink out", with(entry{name: "blobs/x", typ: tar.TypeSymlink, link: "../../etc/passwd"}), "leads out"},
		{"absolute symlink", with(entry{name: "x", typ: tar.TypeSymlink, link: "/etc/passwd"}), "absolute name"},
		{"hard link out", with(entry{name: "x", typ: tar.TypeLink, link: "../x"}), `name with ".."`},
		{"device", with(entry{name: "x", typ: tar.TypeChar}), "tar type"},
		{"fifo", with(entry{name: "x", typ: tar.TypeFifo}), "tar type"},
		{"index.json twice", with(entry{name: "index.json", body: "{}"}), "twice"},
		{"gzip", gz.Bytes(), "compressed"},
		{"sparse", sparse, "sparse"},
		{"truncated", valid[:len(valid)/2], "truncated"},
		{"not a tar", []byte("this is not a tar archive, not at all, no."), "not a valid tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			top := t.TempDir()
			in := filepath.Join(top, "in")
			if err := os.Mkdir(in, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(in, "archive.tar")
			if err := os.WriteFile(path, tc.tar, 0o644); err != nil {
				t.Fatal(err)
			}
			img, err := image.Open(context.Background(), image.Source{Path: path})
			if err == nil {
				img.Close()
			}
			wantCode(t, err, image.CodeInvalid)
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("the error does not say %q: %v", tc.says, err)
			}

			if got := files(t, top); !slices.Equal(got, []string{"in", "in/archive.tar"}) {
				t.Errorf("beside the archive: %v", got)
			}
			if got := files(t, tmp); len(got) != 0 {
				t.Errorf("in TMPDIR: %v", got)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(top), "x")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("above the archive: %v", err)
			}
		})
	}
}

// files lists what is under dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchiveLinksInside: links that stay inside the archive are
// aliases: a layout whose blobs are links to files elsewhere in it
// opens.
func TestArchiveLinksInside(t *testing.T) {
	valid := layoutTarBytes(t, tiny(t, v1.Config{}, "a"))
	var entries []entry
	for _, e := range entriesOf(t, valid) {
		if e.typ != tar.TypeReg || filepath.Dir(e.name) != "blobs/sha256" {
			entries = append(entries, e)
			continue
		}
		// Keep the blob under another name; link its own name to it,
		// by symlink and by hard link alternately.
		stored := "store/" + filepath.Base(e.name)
		link := entry{name: e.name, typ: tar.TypeSymlink, link: "../../" + stored}
		if len(entries)%2 == 0 {
			link = entry{name: e.name, typ: tar.TypeLink, link: stored}
		}
		entries = append(entries, entry{name: stored, body: e.body}, link)
	}
	path := filepath.Join(t.TempDir(), "links.tar")
	if err := os.WriteFile(path, tarBytes(t, entries...), 0o644); err != nil {
		t.Fatal(err)
	}
	got := open(t, image.Source{Path: path})
	checkBlob(t, got.Layers[0])
}

// FuzzOpenArchive opens arbitrary bytes as an archive: Open must refuse
// or succeed without panicking, and a layer it lists must read without
// panicking either.
func FuzzOpenArchive(f *testing.F) {
	img := tiny(f, v1.Config{Env: []string{"A=1"}}, "a")
	f.Add(layoutTarBytes(f, img))
	save, err := os.ReadFile(testutil.WriteDockerSave(f, img, "fuzz:1"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(save)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.tar")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := image.Open(context.Background(), image.Source{Path: path})
		if err != nil {
			return
		}
		defer img.Close()
		for _, l := range img.Layers {
			rc, err := l.Open(context.Background())
			if err != nil {
				continue
			}
			io.Copy(io.Discard, rc)
			rc.Close()
		}
	})
}
