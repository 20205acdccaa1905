package files_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// sparseTar is testutil.SparseTar, checked to be what archive/tar (the
// agent's reader) takes it for.
// Sparse files and their fragments, from testutil.
type (
	sparseFile = testutil.SparseFile
	fragment   = testutil.Fragment
)

func sparseTar(t *testing.T, files ...sparseFile) *bytes.Buffer {
	t.Helper()
	buf := testutil.SparseTar(files...)
	// The format is what archive/tar (the agent's reader) takes it for.
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	for _, f := range files {
		hdr, err := tr.Next()
		if err != nil || hdr.Name != f.Name || hdr.Size != f.Size {
			t.Fatalf("sparse tar: entry %+v, %v; want %s of %d bytes", hdr, err, f.Name, f.Size)
		}
		if b, err := io.ReadAll(tr); err != nil || !bytes.Equal(b, f.Content()) {
			t.Fatalf("sparse tar: %s reads back wrong (%v)", f.Name, err)
		}
	}
	return buf
}

// TestTarUploadSparseBomb: a sparse entry costs its data in the upload
// but its whole size on disk. An archive of many such entries, each
// within MaxFileBytes, must not unpack past the upload's bound.
func TestTarUploadSparseBomb(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	agenttest.WriteHost(t, filepath.Join(f.Work, "dst", "existing"), "keep")
	// 1025 files of 1 MiB each (1025 MiB unpacked) from a 2.5 MiB upload.
	var files []sparseFile
	for i := range agent.DefaultMaxTarBytes/agenttest.MaxFileBytes + 1 {
		files = append(files, sparseFile{Name: fmt.Sprintf("f%04d", i), Size: agenttest.MaxFileBytes, Frags: []fragment{{Off: 0, Data: "x"}}})
	}
	body := sparseTar(t, files...)
	t.Logf("upload of %d bytes, %d MiB unpacked", body.Len(), len(files)*agenttest.MaxFileBytes>>20)
	_, err := f.Client.TarUpload(ctx, "dst", body)
	agenttest.WantErr(t, "sparse bomb", err, errdefs.ErrTooLarge, "tar_too_large")
	if err != nil && !strings.Contains(err.Error(), strconv.Itoa(agent.DefaultMaxTarBytes)) {
		t.Errorf("the refusal does not say the limit: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.Work, "dst"))
	if len(entries) != 1 {
		t.Errorf("dst holds %d entries after the refused upload, want only existing", len(entries))
	}
}

// TestTarUploadKeepsHoles: a sparse file unpacks with its holes, so it
// takes on disk about its data, and reads back with zeros in them.
func TestTarUploadKeepsHoles(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	sf := sparseFile{Name: "sub/big", Size: agenttest.MaxFileBytes, Frags: []fragment{
		{Off: 0, Data: "head"}, {Off: agenttest.MaxFileBytes / 2, Data: "middle"}, {Off: agenttest.MaxFileBytes - 4, Data: "tail"},
	}}
	res, err := f.Client.TarUpload(ctx, "dst", sparseTar(t, sf))
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1 || res.Bytes != agenttest.MaxFileBytes {
		t.Errorf("result %+v, want 1 file of %d bytes", res, agenttest.MaxFileBytes)
	}
	assertSparse(t, filepath.Join(f.Work, "dst", "sub", "big"), agenttest.MaxFileBytes)
	got, err := f.ReadAll(t, "dst/sub/big")
	if err != nil || got != string(sf.Content()) {
		t.Errorf("read back: %d bytes, %v; want the sparse content", len(got), err)
	}

	// Any entry's whole blocks of zeros become holes too, and so do a
	// plain write's.
	dense := "data" + strings.Repeat("\x00", agenttest.MaxFileBytes-8) + "data"
	if _, err := f.Client.TarUpload(ctx, "dst", makeTar(t, tar.Header{Name: "dense", Typeflag: tar.TypeReg, Linkname: dense})); err != nil {
		t.Fatal(err)
	}
	assertSparse(t, filepath.Join(f.Work, "dst", "dense"), agenttest.MaxFileBytes)
	if got, err := f.ReadAll(t, "dst/dense"); err != nil || got != dense {
		t.Errorf("dense read back: %d bytes, %v", len(got), err)
	}
	if _, err := f.Client.WriteFile(ctx, "written", "", false, strings.NewReader(dense)); err != nil {
		t.Fatal(err)
	}
	assertSparse(t, filepath.Join(f.Work, "written"), agenttest.MaxFileBytes)
	if got, err := f.ReadAll(t, "written"); err != nil || got != dense {
		t.Errorf("written read back: %d bytes, %v", len(got), err)
	}
}

// assertSparse fails unless p is size bytes long and takes far less on
// disk: its few blocks of data, not size.
func assertSparse(t *testing.T, p string, size int64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 > size/8 {
		t.Errorf("%s: size %d, %d bytes on disk; want %d bytes with holes (at most %d on disk)", p, st.Size, st.Blocks*512, size, size/8)
	}
}

// TestTarUploadLimits: the bound on what an upload unpacks and on what it
// makes, set in the agent's configuration; the directories an entry's
// name implies count, and a refused upload leaves nothing behind.
func TestTarUploadLimits(t *testing.T) {
	f := agenttest.New(t, func(c *agent.Config) {
		c.MaxTarBytes = 3 * agenttest.MaxFileBytes
		c.MaxTarEntries = 5
	})
	ctx := context.Background()
	mib := func(name string) sparseFile {
		return sparseFile{Name: name, Size: agenttest.MaxFileBytes, Frags: []fragment{{Off: 1, Data: "x"}}}
	}
	reg := func(name, body string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Linkname: body}
	}
	tests := []struct {
		name  string
		body  *bytes.Buffer
		class error
		code  string
		limit string // the refusal names it
	}{
		{"unpacks to the bound", sparseTar(t, mib("a"), mib("b"), mib("c")), nil, "", ""},
		{"unpacks past the bound", sparseTar(t, mib("a"), mib("b"), mib("c"), mib("d")), errdefs.ErrTooLarge, "tar_too_large", strconv.Itoa(3 * agenttest.MaxFileBytes)},
		{"plain files past the bound", makeTar(t, reg("a", strings.Repeat("a", agenttest.MaxFileBytes)), reg("b", strings.Repeat("b", agenttest.MaxFileBytes)),
			reg("c", strings.Repeat("c", agenttest.MaxFileBytes)), reg("d", "d")), errdefs.ErrTooLarge, "tar_too_large", strconv.Itoa(3 * agenttest.MaxFileBytes)},
		{"makes the most it may", makeTar(t, reg("1/2/3/4/file", "x")), nil, "", ""},
		{"implied directories count", makeTar(t, reg("1/2/3/4/5/file", "x")), errdefs.ErrTooLarge, "tar_too_many_entries", "5"},
		{"entries count", makeTar(t, reg("a", "x"), reg("b", "x"), tar.Header{Name: "c", Typeflag: tar.TypeSymlink, Linkname: "a"},
			tar.Header{Name: "d/", Typeflag: tar.TypeDir}, reg("e", "x"), reg("f", "x")), errdefs.ErrTooLarge, "tar_too_many_entries", "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := strings.ReplaceAll(tt.name, " ", "-")
			_, err := f.Client.TarUpload(ctx, dst, tt.body)
			if tt.class == nil {
				if err != nil {
					t.Fatalf("upload: %v", err)
				}
				return
			}
			agenttest.WantErr(t, "upload", err, tt.class, tt.code)
			if err != nil && !strings.Contains(err.Error(), tt.limit) {
				t.Errorf("the refusal does not name the limit %s: %v", tt.limit, err)
			}
			if _, err := os.Lstat(filepath.Join(f.Work, dst)); err == nil {
				t.Errorf("%s exists after the refused upload", dst)
			}
		})
	}
}

// TestWriteKeepsContent: skipping blocks of zeros changes nothing of what
// a file reads back as, whatever its size and wherever its zeros.
func TestWriteKeepsContent(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	z := func(n int) string { return strings.Repeat("\x00", n) }
	for i, body := range []string{
		"", "x", z(1), z(4096), z(5000), z(4096) + "x", "x" + z(4095+4096) + "y", z(4095) + "x" + z(4097),
		z(256<<10-1) + "x" + z(300<<10), z(256<<10) + "x", "x" + z(256<<10), strings.Repeat("ab", 300<<10),
	} {
		p := fmt.Sprintf("w%d", i)
		if _, err := f.Client.WriteFile(ctx, p, "", false, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if got, err := f.ReadAll(t, p); err != nil || got != body {
			t.Errorf("body %d (%d bytes) read back as %d bytes, %v", i, len(body), len(got), err)
		}
	}
}

// TestTarDownloadBoundsHoles: a download fills a sparse file's holes with
// zeros on the wire; a sandbox's sparse files (truncate -s 1P costs no
// disk) must not make a download of unbounded zeros. Holes are bounded
// together by MaxTarBytes; data is not, the disk bounds it.
func TestTarDownloadBoundsHoles(t *testing.T) {
	const limit = 3 * agenttest.MaxFileBytes
	f := agenttest.New(t, func(c *agent.Config) { c.MaxTarBytes = limit })
	ctx := context.Background()
	dense := strings.Repeat("d", 2*limit)
	agenttest.WriteHost(t, filepath.Join(f.Work, "src", "0-dense"), dense)
	for i := range 8 {
		p := filepath.Join(f.Work, "src", fmt.Sprintf("%d-sparse", i+1))
		agenttest.WriteHost(t, p, "x")
		if err := os.Truncate(p, agenttest.MaxFileBytes); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := f.Client.TarDownload(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var holes int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the download ended cleanly after %d bytes of holes, more than the limit of %d", holes, limit)
		}
		if err != nil {
			break // the truncated stream is the refusal
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			break
		}
		if hdr.Name == "0-dense" && string(b) != dense {
			t.Errorf("0-dense read back wrong")
		}
		holes += int64(bytes.Count(b, []byte{0}))
	}
	if holes > limit {
		t.Errorf("the download carried %d bytes of holes, more than the limit of %d", holes, limit)
	}
}
