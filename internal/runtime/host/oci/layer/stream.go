package layer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// stream is a layer's bytes: as given (raw), then as a tar after
// decompression; each counted against MaxBytes and hashed.
type stream struct {
	raw         *counter
	buf         *bufio.Reader // over raw
	dec         io.ReadCloser // the decompressor over buf, if any
	tar         *counter      // what the tar reader reads
	compression string
	err         error // the first limit or decompression error seen
}

// Magic numbers of the compressions a layer may come in.
var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicZstd  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	magicBzip2 = []byte("BZh")
)

// openStream recognises the compression by its magic number (the media
// type may lie; the bytes cannot) and opens the tar stream.
func openStream(r io.Reader, opts Options) (*stream, error) {
	for _, d := range []string{opts.Digest, opts.DiffID} {
		if d != "" && !validDigest(d) {
			return nil, fmt.Errorf("layer: expected digest %q is not sha256:<64 hex digits>", d)
		}
	}
	s := &stream{}
	s.raw = &counter{r: r, h: sha256.New(), limit: opts.MaxBytes, s: s, what: "compressed"}
	s.buf = bufio.NewReaderSize(s.raw, 64<<10)
	magic, _ := s.buf.Peek(6)
	var tr io.Reader = s.buf
	switch {
	case bytes.HasPrefix(magic, magicGzip):
		z, err := gzip.NewReader(s.buf)
		if err != nil {
			return nil, s.firstErr(errdefs.Wrap(errdefs.ErrInvalid, CodeInvalidTar, err, "the layer's gzip stream is corrupt"))
		}
		s.dec, tr, s.compression = z, z, "gzip"
	case bytes.HasPrefix(magic, magicZstd):
		if opts.Zstd == nil {
			return nil, errdefs.New(errdefs.ErrUnsupported, CodeCompression, "the layer is zstd-compressed, which this server cannot decompress")
		}
		z, err := opts.Zstd(s.buf)
		if err != nil {
			return nil, s.firstErr(errdefs.Wrap(errdefs.ErrInvalid, CodeInvalidTar, err, "the layer's zstd stream is corrupt"))
		}
		s.dec, tr, s.compression = z, z, "zstd"
	case bytes.HasPrefix(magic, magicXz), bytes.HasPrefix(magic, magicBzip2):
		return nil, errdefs.New(errdefs.ErrUnsupported, CodeCompression, "the layer is compressed with xz or bzip2, which OCI images do not use")
	default:
		s.compression = "none"
	}
	s.tar = &counter{r: tr, limit: opts.MaxBytes, s: s, what: "uncompressed"}
	if s.dec != nil {
		// An uncompressed stream is hashed once: its two digests are one.
		s.tar.h = sha256.New()
	}
	return s, nil
}

// firstErr keeps a limit error met while opening over what it caused.
func (s *stream) firstErr(err error) error {
	if s.err != nil {
		return s.err
	}
	return err
}

// finish reads what follows the tar's end (padding, the rest of a
// compressed stream: the digests cover it), then fills in and checks the
// digests.
func (s *stream) finish(st *Stats, opts Options) error {
	if _, err := io.Copy(io.Discard, s.tar); err != nil {
		return s.firstErr(errdefs.Wrap(errdefs.ErrInvalid, CodeInvalidTar, err, "the layer's stream is corrupt after its last entry"))
	}
	if _, err := io.Copy(io.Discard, s.buf); err != nil {
		return s.firstErr(fmt.Errorf("layer: read the rest of the stream: %w", err))
	}
	st.StreamBytes = s.tar.n
	st.Digest = "sha256:" + hex.EncodeToString(s.raw.h.Sum(nil))
	st.DiffID = st.Digest
	if s.tar.h != nil {
		st.DiffID = "sha256:" + hex.EncodeToString(s.tar.h.Sum(nil))
	}
	if opts.Digest != "" && opts.Digest != st.Digest {
		return errdefs.New(errdefs.ErrInvalid, CodeDigestMismatch, "the layer's digest is %s, not the %s expected", st.Digest, opts.Digest)
	}
	if opts.DiffID != "" && opts.DiffID != st.DiffID {
		return errdefs.New(errdefs.ErrInvalid, CodeDigestMismatch, "the layer's uncompressed digest is %s, not the %s expected", st.DiffID, opts.DiffID)
	}
	return nil
}

func (s *stream) close() {
	if s.dec != nil {
		s.dec.Close()
	}
}

// counter counts (and hashes, with h) what is read through it and fails
// past limit.
type counter struct {
	r     io.Reader
	h     hash.Hash // nil: no hash
	n     int64
	limit int64
	s     *stream
	what  string
}

func (c *counter) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		// One byte more proves the stream goes past the limit.
		p = p[:min(len(p), 1)]
	} else if rest := c.limit - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	c.n += int64(n)
	if c.n > c.limit {
		e := errdefs.New(errdefs.ErrTooLarge, CodeTooLarge, "the layer's %s stream is larger than %d bytes, the most a layer may be", c.what, c.limit)
		if c.s.err == nil {
			c.s.err = e
		}
		return 0, e
	}
	return n, err
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}
