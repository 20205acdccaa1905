package proc

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// eventWriter writes an exec or output stream: NDJSON events (protocol
// 1, or a client that does not accept frames), or binary frames
// (agentproto.MediaFrames). After the first failed write it writes
// nothing more; err says why.
type eventWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	enc    *json.Encoder // NDJSON only
	frames bool
	buf    []byte // the frame being written
	err    error
}

// newEventWriter chooses the stream's form by the request's Accept and
// sends the answer's header.
func newEventWriter(w http.ResponseWriter, r *http.Request) *eventWriter {
	e := &eventWriter{w: w, rc: http.NewResponseController(w)}
	if accepts(r, agentproto.MediaFrames) {
		e.frames = true
		w.Header().Set("Content-Type", agentproto.MediaFrames)
	} else {
		e.enc = json.NewEncoder(w)
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.WriteHeader(http.StatusOK)
	return e
}

// accepts reports whether r's Accept names media type mt.
func accepts(r *http.Request, mt string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, t := range strings.Split(v, ",") {
			t, _, _ = strings.Cut(t, ";")
			if strings.EqualFold(strings.TrimSpace(t), mt) {
				return true
			}
		}
	}
	return false
}

// event writes an agentproto.ExecEvent or OutputEvent.
func (e *eventWriter) event(ev any) {
	if e.err != nil {
		return
	}
	if !e.frames {
		e.err = e.enc.Encode(ev)
		return
	}
	switch ev := ev.(type) {
	case agentproto.ExecEvent:
		if ev.Type == agentproto.Exit {
			e.json(agentproto.FrameExit, 0, ev.Exit)
			return
		}
		e.data(streamKind(ev.Type), 0, ev.Data)
	case agentproto.OutputEvent:
		switch ev.Type {
		case agentproto.Exit:
			e.json(agentproto.FrameExit, ev.Offset, ev.Process)
		case agentproto.Dropped:
			e.write(agentproto.AppendFrame(e.buf[:0], agentproto.FrameDropped, ev.Offset, binary.BigEndian.AppendUint64(nil, uint64(ev.Dropped))))
		default:
			e.data(streamKind(ev.Type), ev.Offset, ev.Data)
		}
	}
}

// data writes output in frames of at most agentproto.MaxFrame bytes, the
// header and the bytes apart, so the bytes are not copied into a frame
// first.
func (e *eventWriter) data(kind byte, offset int64, b []byte) {
	for e.err == nil {
		n := min(len(b), agentproto.MaxFrame)
		e.buf = agentproto.AppendFrameHeader(e.buf[:0], kind, offset, n)
		if _, e.err = e.w.Write(e.buf); e.err == nil {
			_, e.err = e.w.Write(b[:n])
		}
		if b, offset = b[n:], offset+int64(n); len(b) == 0 {
			return
		}
	}
}

func (e *eventWriter) json(kind byte, offset int64, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return
	}
	e.write(agentproto.AppendFrame(e.buf[:0], kind, offset, b))
}

func (e *eventWriter) write(frame []byte) {
	e.buf = frame
	_, e.err = e.w.Write(frame)
}

func streamKind(typ string) byte {
	if typ == agentproto.Stderr {
		return agentproto.FrameStderr
	}
	return agentproto.FrameStdout
}

func (e *eventWriter) flush() {
	if e.err == nil {
		e.err = e.rc.Flush()
	}
}
