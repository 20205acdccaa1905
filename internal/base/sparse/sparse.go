// Package sparse copies a stream into a file leaving its runs of zeros as
// holes, as cp --sparse=auto does: a sparse file from a tar (whose reader
// gives holes as zeros) takes on disk about its data, not its size. The
// agent's file and tar uploads and the image layer unpacker use it.
package sparse

import (
	"bytes"
	"context"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// bufBytes is what a Copier reads at once; maxBlock bounds the block size
// it honours (larger ones are treated as 4 KiB).
const (
	bufBytes = 256 << 10
	maxBlock = 64 << 10
)

// Copier copies with buffers it keeps between copies; the zero value is
// ready. It is not safe for concurrent use.
type Copier struct {
	buf, zero []byte
}

// Copy copies r into f, an empty file, and returns the bytes read. A block
// of zeros (the file system's block size, at a multiple of it) is skipped,
// not written, and the final size set with ftruncate, so it stays a hole.
// The content read back is the same. ctx is checked between reads.
func (c *Copier) Copy(ctx context.Context, f *os.File, r io.Reader) (int64, error) {
	if c.buf == nil {
		c.buf, c.zero = make([]byte, bufBytes), make([]byte, maxBlock)
	}
	bs := 4096
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil && st.Blksize >= 512 && st.Blksize <= maxBlock && st.Blksize&(st.Blksize-1) == 0 {
		bs = int(st.Blksize)
	}
	var off int64
	for {
		if err := ctx.Err(); err != nil {
			return off, err
		}
		n, err := io.ReadFull(r, c.buf)
		start := -1 // the run of blocks with data being gathered
		for i := 0; i < n; i += bs {
			end := min(i+bs, n)
			if !bytes.Equal(c.buf[i:end], c.zero[:end-i]) {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				if _, err := f.WriteAt(c.buf[start:i], off+int64(start)); err != nil {
					return off, err
				}
				start = -1
			}
		}
		if start >= 0 {
			if _, err := f.WriteAt(c.buf[start:n], off+int64(start)); err != nil {
				return off, err
			}
		}
		off += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if off == 0 {
				return 0, nil
			}
			return off, f.Truncate(off)
		}
		if err != nil {
			return off, err
		}
	}
}
