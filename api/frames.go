package api

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// MediaExecFrames is the binary form of POST /v1/sandboxes/{id}/exec/stream,
// sent when the request's Accept names it: output stays bytes, with no
// JSON and no base64. Each frame is a kind byte, a 4-byte big-endian
// length and that many bytes: FrameStdout and FrameStderr carry output,
// FrameExit, the last, carries the ExecResult as JSON (stdout and stderr
// empty).
const MediaExecFrames = "application/vnd.hutch.exec-frames"

// Kinds of exec frames.
const (
	FrameStdout byte = 1
	FrameStderr byte = 2
	FrameExit   byte = 3
)

// MaxExecFrame bounds a frame's payload.
const MaxExecFrame = 16 << 20

// AppendExecFrameHeader appends the header of a frame of kind and n bytes.
func AppendExecFrameHeader(b []byte, kind byte, n int) []byte {
	return binary.BigEndian.AppendUint32(append(b, kind), uint32(n))
}

// ReadExecFrame reads one frame: its kind and payload (freshly
// allocated). io.EOF only at a clean end between frames.
func ReadExecFrame(r *bufio.Reader) (byte, []byte, error) {
	return ReadExecFrameInto(r, nil)
}

// ReadExecFrameInto is ReadExecFrame reading the payload into buf when it
// fits (the payload is then buf[:n]), into a fresh allocation when not.
func ReadExecFrameInto(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if hdr[0] < FrameStdout || hdr[0] > FrameExit || n > MaxExecFrame {
		return 0, nil, fmt.Errorf("exec frame of kind %d and %d bytes", hdr[0], n)
	}
	b := buf[:0]
	if cap(b) < int(n) {
		b = make([]byte, n)
	}
	b = b[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], b, nil
}
