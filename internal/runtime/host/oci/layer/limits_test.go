package layer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
	"github.com/hutchdev/hutch/internal/testutil"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestGzipLayer: a gzip layer unpacks; both digests are reported and
// checked.
func TestGzipLayer(t *testing.T) {
	raw := tarOf(t, dir("bin", 0o755), file("bin/sh", "#!", 0o755), symlink("sh", "bin/sh"), hardlink("bin/dash", "bin/sh"))
	gz := gzipped(t, raw)
	f := newFixture(t)
	st, err := layer.Apply(context.Background(), f.root, bytes.NewReader(gz), layer.Options{Digest: digest(gz), DiffID: digest(raw)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Compression != "gzip" || st.Digest != digest(gz) || st.DiffID != digest(raw) || st.StreamBytes != int64(len(raw)) {
		t.Errorf("stats: %+v", st)
	}
	if st.Entries != 4 || st.Files != 1 || st.Dirs != 1 || st.Symlinks != 1 || st.Hardlinks != 1 || st.Bytes != 2 {
		t.Errorf("counts: %+v", st)
	}
	want := `file 0755 "#!" links=2`
	for _, p := range []string{"bin/sh", "bin/dash"} {
		if got := describe(t, filepath.Join(f.root, p)); got != want {
			t.Errorf("%s is %s", p, got)
		}
	}
	for _, opts := range []layer.Options{{Digest: digest(raw)}, {DiffID: digest(gz)}} {
		g := newFixture(t)
		_, err := layer.Apply(context.Background(), g.root, bytes.NewReader(gz), opts)
		wantCode(t, "wrong digest", err, layer.CodeDigestMismatch)
	}
	g := newFixture(t)
	_, err = layer.Apply(context.Background(), g.root, bytes.NewReader(gz[:len(gz)/2]), layer.Options{})
	wantCode(t, "truncated gzip", err, layer.CodeInvalidTar)
}

// TestPlainLayer: an uncompressed layer's two digests are the same.
func TestPlainLayer(t *testing.T) {
	raw := tarOf(t, file("f", "x", 0o644))
	f := newFixture(t)
	st := f.mustApply(t, layer.Options{}, file("f", "x", 0o644))
	if st.Compression != "none" || st.Digest != digest(raw) || st.DiffID != digest(raw) {
		t.Errorf("stats: %+v", st)
	}
}

// TestZstd: zstd needs a decoder wired in; without one it is refused with
// a reason, with one the decoder gets the whole stream.
func TestZstd(t *testing.T) {
	raw := tarOf(t, file("f", "zstd", 0o644))
	framed := append([]byte{0x28, 0xb5, 0x2f, 0xfd}, raw...)
	f := newFixture(t)
	_, err := layer.Apply(context.Background(), f.root, bytes.NewReader(framed), layer.Options{})
	wantCode(t, "zstd without a decoder", err, layer.CodeCompression)
	if !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("zstd refusal is not unsupported: %v", err)
	}
	// A stand-in decoder: drops the magic number.
	dec := func(r io.Reader) (io.ReadCloser, error) {
		magic := make([]byte, 4)
		if _, err := io.ReadFull(r, magic); err != nil {
			return nil, err
		}
		return io.NopCloser(r), nil
	}
	st, err := layer.Apply(context.Background(), f.root, bytes.NewReader(framed), layer.Options{Zstd: dec, DiffID: digest(raw)})
	if err != nil || st.Compression != "zstd" || readFile(t, filepath.Join(f.root, "f")) != "zstd" {
		t.Errorf("zstd with a decoder: %+v, %v", st, err)
	}
	for _, magic := range [][]byte{{0xfd, '7', 'z', 'X', 'Z', 0}, []byte("BZh91AY")} {
		_, err := layer.Apply(context.Background(), f.root, bytes.NewReader(append(magic, raw...)), layer.Options{})
		wantCode(t, "xz or bzip2", err, layer.CodeCompression)
	}
}

// TestNotATar: garbage is refused as not a tar.
func TestNotATar(t *testing.T) {
	f := newFixture(t)
	_, err := layer.Apply(context.Background(), f.root, strings.NewReader(strings.Repeat("not a tar ", 100)), layer.Options{})
	wantCode(t, "garbage", err, layer.CodeInvalidTar)
	raw := tarOf(t, file("f", strings.Repeat("x", 2000), 0o644))
	_, err = layer.Apply(context.Background(), f.root, bytes.NewReader(raw[:1500]), layer.Options{})
	wantCode(t, "truncated", err, layer.CodeInvalidTar)
}

// TestLimits: entries, bytes, and the stream itself are bounded.
func TestLimits(t *testing.T) {
	many := make([]ent, 11)
	for i := range many {
		many[i] = file(fmt.Sprintf("f%d", i), "", 0o644)
	}
	f := newFixture(t)
	_, err := f.apply(t, layer.Options{MaxEntries: 10}, many...)
	wantCode(t, "entries", err, layer.CodeTooManyEntries)
	f.mustApply(t, layer.Options{MaxEntries: 11}, many...)

	big := []ent{file("a", strings.Repeat("a", 600), 0o644), file("b", strings.Repeat("b", 600), 0o644)}
	_, err = f.apply(t, layer.Options{MaxBytes: 1000}, big...)
	wantCode(t, "bytes", err, layer.CodeTooLarge)
	if !errors.Is(err, errdefs.ErrTooLarge) {
		t.Errorf("not too large: %v", err)
	}

	// A gzip bomb: 64 MiB of zeros in a few KiB, refused at the bound
	// without being unpacked.
	bomb := gzipped(t, tarOf(t, file("zeros", string(make([]byte, 64<<20)), 0o644)))
	t.Logf("bomb: %d bytes compressed", len(bomb))
	g := newFixture(t)
	_, err = layer.Apply(context.Background(), g.root, bytes.NewReader(bomb), layer.Options{MaxBytes: 1 << 20})
	wantCode(t, "gzip bomb", err, layer.CodeTooLarge)

	// Headers count too: a stream of nothing but long PAX names.
	var pax []ent
	for i := range 64 {
		pax = append(pax, dir(fmt.Sprintf("%03d/%s", i, strings.Repeat("n", 200)), 0o755))
	}
	h := newFixture(t)
	_, err = h.apply(t, layer.Options{MaxBytes: 16 << 10}, pax...)
	wantCode(t, "headers", err, layer.CodeTooLarge)

	// Trailing bytes after the tar's end count as well.
	raw := append(tarOf(t, file("f", "x", 0o644)), make([]byte, 64<<10)...)
	_, err = layer.Apply(context.Background(), h.root, bytes.NewReader(raw), layer.Options{MaxBytes: 32 << 10})
	wantCode(t, "trailing", err, layer.CodeTooLarge)
}

// TestDeepNames: directories a layer needs but does not describe count
// against MaxEntries, and making a deep path costs its depth, not its
// square (each level is made from the one above, not from the root).
func TestDeepNames(t *testing.T) {
	deep := func(top string) string { return top + strings.Repeat("/a", 2000) + "/f" }
	f := newFixture(t)
	_, err := f.apply(t, layer.Options{MaxEntries: 1000}, file(deep("x"), "x", 0o644))
	wantCode(t, "2000 directories under a bound of 1000", err, layer.CodeTooManyEntries)

	g := newFixture(t)
	start := time.Now()
	var ents []ent
	for i := range 4 {
		ents = append(ents, file(deep(fmt.Sprintf("x%d", i)), "x", 0o644))
	}
	st := g.mustApply(t, layer.Options{}, ents...)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("4 entries 2000 deep took %v", took)
	}
	if st.Files != 4 {
		t.Errorf("stats: %+v", st)
	}
	// Flatten's opaque marker walks them too.
	g.mustApply(t, layer.Options{}, whiteout(".wh..wh..opq"), file(deep("x0"), "y", 0o644))
	if got := readFile(t, filepath.Join(g.root, deep("x0"))); got != "y" {
		t.Errorf("deep file after the opaque root: %q", got)
	}
}

// TestNames: long names work up to Linux's limits and are refused past
// them, before any system call.
func TestNames(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("d/", 100) + strings.Repeat("n", 255)
	deep := strings.Repeat(strings.Repeat("x", 200)+"/", 15) + "f"
	f.mustApply(t, layer.Options{}, file(long, "long", 0o644), file(deep, "deep", 0o644), symlink("l", strings.Repeat("t", 4095)))
	if got := readFile(t, filepath.Join(f.root, long)); got != "long" {
		t.Errorf("long name: %q", got)
	}
	for name, n := range map[string]string{
		"component": "a/" + strings.Repeat("n", 256),
		"path":      strings.Repeat(strings.Repeat("x", 200)+"/", 21) + "f",
	} {
		_, err := f.apply(t, layer.Options{}, file(n, "x", 0o644))
		wantCode(t, name, err, layer.CodeNameTooLong)
	}
	_, err := f.apply(t, layer.Options{}, symlink("l2", strings.Repeat("t", 4096)))
	wantCode(t, "symlink target", err, layer.CodeNameTooLong)
}

// TestSparse: a sparse file keeps its holes, and its holes count against
// MaxBytes: a sparse bomb is refused.
func TestSparse(t *testing.T) {
	const size = 64 << 20
	f := newFixture(t)
	st, err := layer.Apply(context.Background(), f.root, sparseTar(t, "s", size, map[int64]string{0: "head", size - 4: "tail"}), layer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s unix.Stat_t
	if err := unix.Stat(filepath.Join(f.root, "s"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Size != size || s.Blocks*512 > 1<<20 {
		t.Errorf("sparse file: size %d, %d bytes on disk", s.Size, s.Blocks*512)
	}
	if st.Bytes != size {
		t.Errorf("Bytes = %d, want the apparent %d", st.Bytes, size)
	}
	b := readFile(t, filepath.Join(f.root, "s"))
	if b[:4] != "head" || b[size-4:] != "tail" || strings.Trim(b[4:size-4], "\x00") != "" {
		t.Error("sparse file reads back wrong")
	}
	g := newFixture(t)
	_, err = layer.Apply(context.Background(), g.root, sparseTar(t, "s", 1<<40, map[int64]string{0: "x"}), layer.Options{MaxBytes: 1 << 30})
	wantCode(t, "sparse bomb", err, layer.CodeTooLarge)
}

// sparseTar is one sparse file of size bytes, zeros but for frags, in
// the PAX 1.0 format GNU tar writes (testutil.SparseTar).
func sparseTar(t *testing.T, name string, size int64, frags map[int64]string) io.Reader {
	t.Helper()
	f := testutil.SparseFile{Name: name, Size: size}
	for _, off := range slices.Sorted(maps.Keys(frags)) {
		f.Frags = append(f.Frags, testutil.Fragment{Off: off, Data: frags[off]})
	}
	return testutil.SparseTar(f)
}

// TestCancel: a cancelled context stops the layer.
func TestCancel(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := layer.Apply(ctx, f.root, bytes.NewReader(tarOf(t, file("f", "x", 0o644))), layer.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
