package sparse

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyKeepsHoles: 8 MiB of zeros between two runs of data come back
// the same and take (almost) no blocks on disk; a cancelled context stops
// the copy.
func TestCopyKeepsHoles(t *testing.T) {
	data := append(append(bytes.Repeat([]byte("a"), 5000), make([]byte, 8<<20)...), bytes.Repeat([]byte("b"), 3)...)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c Copier
	n, err := c.Copy(context.Background(), f, bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v; want the same %d bytes", len(got), err, len(data))
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 1<<20 {
		t.Errorf("%d bytes on disk for 5003 bytes of data: the zeros were written", used)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Copy(ctx, f, bytes.NewReader(data)); err == nil {
		t.Error("a cancelled copy went on")
	}
}
