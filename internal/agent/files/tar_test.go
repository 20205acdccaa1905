package files_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

type tarEntry struct {
	Name, Link, Body string
	Type             byte
}

func readTar(t *testing.T, r io.Reader) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{Name: hdr.Name, Link: hdr.Linkname, Body: string(b), Type: hdr.Typeflag})
	}
}

func makeTar(t *testing.T, entries ...tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := h.Linkname
		if h.Typeflag == tar.TypeReg {
			h.Linkname = ""
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestTarRoundTrip(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	agenttest.WriteHost(t, filepath.Join(f.Work, "src", "a.txt"), "aaa")
	agenttest.WriteHost(t, filepath.Join(f.Work, "src", "sub", "b.bin"), "\x00\xffb")
	if err := os.Mkdir(filepath.Join(f.Work, "src", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(f.Work, "src", "sub", "b.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	agenttest.Symlink(t, "/etc/passwd", filepath.Join(f.Work, "src", "sub", "link"))

	rc, err := f.Client.TarDownload(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	want := []tarEntry{
		{Name: "a.txt", Body: "aaa", Type: tar.TypeReg},
		{Name: "empty/", Type: tar.TypeDir},
		{Name: "sub/", Type: tar.TypeDir},
		{Name: "sub/b.bin", Body: "\x00\xffb", Type: tar.TypeReg},
		{Name: "sub/link", Link: "/etc/passwd", Type: tar.TypeSymlink},
	}
	if d := cmp.Diff(want, readTar(t, bytes.NewReader(buf.Bytes()))); d != "" {
		t.Fatalf("download (-want +got):\n%s", d)
	}

	res, err := f.Client.TarUpload(ctx, "dst/deeper", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(api.TarResult{Path: filepath.Join(f.Work, "dst/deeper"), Files: 2, Bytes: 6}, res); d != "" {
		t.Errorf("upload result (-want +got):\n%s", d)
	}
	rc, err = f.Client.TarDownload(ctx, "dst/deeper")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if d := cmp.Diff(want, readTar(t, rc)); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	for p, mode := range map[string]os.FileMode{"sub/b.bin": 0o755, "a.txt": 0o644, "empty": 0o700 | os.ModeDir} {
		st, err := os.Lstat(filepath.Join(f.Work, "dst/deeper", p))
		if err != nil || st.Mode() != mode {
			t.Errorf("%s mode %v, %v; want %v", p, st.Mode(), err, mode)
		}
	}

	_, err = f.Client.TarDownload(ctx, "src/a.txt")
	agenttest.WantErr(t, "tar of a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = f.Client.TarDownload(ctx, "nope")
	agenttest.WantErr(t, "tar of nothing", err, errdefs.ErrNotFound, "file_not_found")
}

func TestTarUploadRefused(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	agenttest.WriteHost(t, filepath.Join(f.Work, "dst", "existing"), "keep")
	reg := func(name, body string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Linkname: body}
	}
	tests := []struct {
		name    string
		entries []tar.Header
		class   error
		code    string
	}{
		{"dot-dot", []tar.Header{reg("ok.txt", "x"), reg("../x", "evil")}, errdefs.ErrInvalid, "invalid_path"},
		{"dot-dot inside", []tar.Header{reg("a/../../x", "evil")}, errdefs.ErrInvalid, "invalid_path"},
		{"absolute", []tar.Header{reg("/tmp/hutch-evil", "evil")}, errdefs.ErrInvalid, "invalid_path"},
		{"hard link", []tar.Header{reg("ok.txt", "x"), {Name: "hl", Typeflag: tar.TypeLink, Linkname: "ok.txt"}}, errdefs.ErrInvalid, "unsupported_tar_entry"},
		{"char device", []tar.Header{{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, errdefs.ErrInvalid, "unsupported_tar_entry"},
		{"fifo", []tar.Header{{Name: "fifo", Typeflag: tar.TypeFifo}}, errdefs.ErrInvalid, "unsupported_tar_entry"},
		{"too large", []tar.Header{reg("new/big", strings.Repeat("x", agenttest.MaxFileBytes+1))}, errdefs.ErrTooLarge, "file_too_large"},
		{"through its own symlink", []tar.Header{
			{Name: "newdir/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "newdir/etc", Typeflag: tar.TypeSymlink, Linkname: "/etc"},
			reg("newdir/etc/hutch-evil", "evil"),
		}, errdefs.ErrInvalid, "invalid_path"},
		{"through a symlink up", []tar.Header{
			{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "../../.."},
			reg("up/hutch-evil", "evil"),
		}, errdefs.ErrInvalid, "invalid_path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.Client.TarUpload(ctx, "dst", makeTar(t, tt.entries...))
			agenttest.WantErr(t, "upload", err, tt.class, tt.code)
			entries, _ := os.ReadDir(filepath.Join(f.Work, "dst"))
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if d := cmp.Diff([]string{"existing"}, got); d != "" {
				t.Errorf("dst after the refused upload (-want +got):\n%s", d)
			}
			for _, p := range []string{filepath.Join(f.Work, "x"), "/etc/hutch-evil", "/tmp/hutch-evil", filepath.Join(f.Root, "hutch-evil")} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after the refused upload", p)
				}
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.Work, "dst", "existing")); string(b) != "keep" {
		t.Errorf("existing file changed: %q", b)
	}
	// A refused upload into a directory it created removes the directory.
	_, err := f.Client.TarUpload(ctx, "fresh", makeTar(t, reg("../x", "evil")))
	agenttest.WantErr(t, "upload into fresh", err, errdefs.ErrInvalid, "invalid_path")
	if _, err := os.Lstat(filepath.Join(f.Work, "fresh")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fresh exists after a refused upload: %v", err)
	}
	_, err = f.Client.TarUpload(ctx, "dst", strings.NewReader("this is not a tar archive, not at all, no........................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................."))
	agenttest.WantErr(t, "garbage", err, errdefs.ErrInvalid, "invalid_tar")
}
