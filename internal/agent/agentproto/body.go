package agentproto

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// A streamed request body (HeaderBody BodyFramed: a file or tar upload,
// whose hash the client cannot know before it sends) goes in chunks, each
// a 4-byte big-endian length (1 to maxChunk) and that many bytes, then a
// 4-byte zero and the 32 raw bytes of BodyMAC over the hex SHA-256 of the
// data. The MAC is inside the body, not an HTTP trailer: a trailer the
// client sends after the agent has answered early (a refused upload)
// races the stream's reset and costs the whole HTTP/2 connection.
const maxChunk = 1 << 20

// ErrBodyMismatch ends a framed body whose MAC does not match its data.
var ErrBodyMismatch = errors.New("the body does not match its signature")

// FrameBody returns a reader of r's bytes framed as above, signed with
// token for nonce.
func FrameBody(r io.Reader, token, nonce string) io.Reader {
	return &bodyFramer{r: r, h: sha256.New(), token: token, nonce: nonce, buf: make([]byte, 4+32<<10)}
}

type bodyFramer struct {
	r            io.Reader
	h            hash.Hash
	token, nonce string
	buf          []byte
	pending      []byte
	done         bool
}

func (f *bodyFramer) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.done {
			return 0, io.EOF
		}
		n, err := f.r.Read(f.buf[4:])
		if n > 0 {
			f.h.Write(f.buf[4 : 4+n])
			binary.BigEndian.PutUint32(f.buf, uint32(n))
			f.pending = f.buf[:4+n]
		}
		if err == io.EOF {
			mac, _ := hex.DecodeString(BodyMAC(f.token, f.nonce, hex.EncodeToString(f.h.Sum(nil))))
			f.pending = append(append(f.pending, 0, 0, 0, 0), mac...)
			f.done = true
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// UnframeBody returns a reader of the data of a framed body r, which ends
// with io.EOF when its MAC matches (token, nonce) and ErrBodyMismatch when
// it does not.
func UnframeBody(r io.Reader, token, nonce string) io.Reader {
	return &bodyUnframer{r: r, h: sha256.New(), token: token, nonce: nonce}
}

type bodyUnframer struct {
	r            io.Reader
	h            hash.Hash
	token, nonce string
	left         int // of the current chunk
	err          error
}

func (u *bodyUnframer) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	if u.left == 0 {
		var hdr [4]byte
		if _, err := io.ReadFull(u.r, hdr[:]); err != nil {
			return 0, u.fail(err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 {
			if u.err = u.end(); u.err == io.EOF {
				return 0, io.EOF
			}
			return 0, u.fail(u.err)
		}
		if n > maxChunk {
			return 0, u.fail(fmt.Errorf("a body chunk of %d bytes, more than %d", n, maxChunk))
		}
		u.left = int(n)
	}
	n, err := u.r.Read(p[:min(len(p), u.left)])
	u.h.Write(p[:n])
	u.left -= n
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, u.fail(err)
	}
	return n, nil
}

// end checks the MAC after the last chunk.
func (u *bodyUnframer) end() error {
	var got [sha256.Size]byte
	if _, err := io.ReadFull(u.r, got[:]); err != nil {
		return err
	}
	want, _ := hex.DecodeString(BodyMAC(u.token, u.nonce, hex.EncodeToString(u.h.Sum(nil))))
	if !hmac.Equal(got[:], want) {
		return ErrBodyMismatch
	}
	return io.EOF
}

func (u *bodyUnframer) fail(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	u.err = err
	return err
}
