package agentproto

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// MediaFrames is the content type of a framed stream: the answer of
// POST /exec and GET /processes/{pid}/output when the request's Accept
// names it (FeatureFrames). Output stays bytes from the pipe to the
// control plane: no JSON, no base64.
//
// A frame is a 13-byte header, then its payload:
//
//	kind    1 byte   FrameStdout, FrameStderr, FrameDropped or FrameExit
//	length  4 bytes  big-endian, the payload's length, at most MaxFrame
//	offset  8 bytes  big-endian: where the payload starts in the
//	                 process's output (output streams), 0 in exec streams
//
// FrameStdout and FrameStderr carry output; FrameDropped carries, as 8
// big-endian bytes, how many bytes were lost before offset; FrameExit, the
// last, carries JSON: an ExitStatus in exec streams, a Process in output
// streams.
const MediaFrames = "application/vnd.hutch.frames"

// Frame kinds.
const (
	FrameStdout  byte = 1
	FrameStderr  byte = 2
	FrameDropped byte = 3
	FrameExit    byte = 4
)

// FrameHeader is the length of a frame's header; MaxFrame bounds a
// payload.
const (
	FrameHeader = 13
	MaxFrame    = 1 << 20
)

// Frame is one decoded frame.
type Frame struct {
	Kind    byte
	Offset  int64
	Payload []byte
}

// AppendFrame appends one frame to b.
func AppendFrame(b []byte, kind byte, offset int64, payload []byte) []byte {
	return append(AppendFrameHeader(b, kind, offset, len(payload)), payload...)
}

// AppendFrameHeader appends the header of a frame of n bytes to b.
func AppendFrameHeader(b []byte, kind byte, offset int64, n int) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

// FrameReader decodes frames from a stream.
type FrameReader struct {
	r    *bufio.Reader
	hdr  [FrameHeader]byte
	free chan []byte // payloads handed back by Recycle
}

// recycleMin is the least payload read into a recycled buffer: below it
// an allocation is cheap, and from it on (Go's large objects) a fresh one
// costs its clearing and page faults, most of the control plane's CPU in
// output at pipe speed.
const recycleMin = 32 << 10

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), free: make(chan []byte, 4)}
}

// Recycle hands back the payload of a frame this reader returned, once
// its reader is done with it, so a later frame may be read into it. After
// Recycle the caller must not touch b. A reader keeps its own buffers:
// nothing recycled reaches another stream. Safe beside Next.
func (f *FrameReader) Recycle(b []byte) {
	if cap(b) < recycleMin {
		return
	}
	select {
	case f.free <- b:
	default:
	}
}

// Next returns the next frame, its payload freshly allocated or a
// recycled one's; io.EOF at a clean end between frames,
// io.ErrUnexpectedEOF inside one.
func (f *FrameReader) Next() (Frame, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(f.hdr[1:5])
	fr := Frame{Kind: f.hdr[0], Offset: int64(binary.BigEndian.Uint64(f.hdr[5:]))}
	switch {
	case fr.Kind < FrameStdout || fr.Kind > FrameExit:
		return Frame{}, fmt.Errorf("frame of unknown kind %d", fr.Kind)
	case n > MaxFrame:
		return Frame{}, fmt.Errorf("frame of %d bytes, more than %d", n, MaxFrame)
	case fr.Offset < 0:
		return Frame{}, fmt.Errorf("frame at negative offset %d", fr.Offset)
	}
	fr.Payload = f.buffer(int(n))
	if _, err := io.ReadFull(f.r, fr.Payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return fr, nil
}

// buffer is a payload of n bytes: a recycled buffer when one is free and
// n is large enough to be worth it.
func (f *FrameReader) buffer(n int) []byte {
	if n >= recycleMin {
		select {
		case b := <-f.free:
			if cap(b) >= n {
				return b[:n]
			}
		default:
		}
	}
	return make([]byte, n)
}
