package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// Bounds of merged output: contiguous output of one stream that the pump
// has already read goes as one event or message, up to these many bytes
// of data. JSON events stay within what the agent itself sends in one
// event (256 KiB), so clients sized for that keep working.
const (
	maxJSONData   = 256 << 10
	maxBinaryData = api.MaxOutputMessage
)

// processOutput answers GET …/processes/{pid}/output: the process's output
// from a cursor (?cursor=, or Last-Event-ID when resuming) as Server-Sent
// Events (each id is the cursor after it), or as WebSocket messages when
// the request is an upgrade (binary ones with the subprotocol
// api.OutputProtocolBinary, one api.OutputEvent as JSON each otherwise). With
// follow (the default) it goes on until the process's output ends, with
// an "exit" event.
func (a *API) processOutput(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	cur := q.Get("cursor")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		cur = id
	}
	cursor, err := parseCursor(cur)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	follow := true
	if v := q.Get("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			a.writeError(w, r, errdefs.Invalid("invalid_request", "follow=%q is not true or false", v))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st, err := a.cfg.Sandboxes.ProcessOutput(ctx, r.PathValue("id"), pid, cursor, follow)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	if isWebSocket(r) {
		a.outputWebSocket(ctx, w, r, st, cursor)
		return
	}
	a.outputSSE(ctx, w, r, st)
}

func parseCursor(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errdefs.Invalid("invalid_cursor", "cursor %q must be a byte offset, 0 or more", v)
	}
	return n, nil
}

// outputSSE relays the output as Server-Sent Events. What the pump holds
// goes out in one write and one flush; nothing waits for more.
func (a *API) outputSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, st sandbox.Stream[api.OutputEvent]) {
	sse, err := newSSE(w)
	if err != nil {
		return
	}
	p := sandbox.StartPump(ctx, st, pumpAhead)
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	var m merger
	write := func(ev api.OutputEvent) error {
		b := sse.begin(strconv.FormatInt(nextCursor(ev), 10), ev.Type)
		sse.end(appendOutputJSON(b, ev))
		if sse.pending() >= maxJSONData {
			return sse.send()
		}
		return nil
	}
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				if p.Err() != nil {
					a.cfg.Log.Warn("process output stream ended", logattr.Sandbox(r.PathValue("id")), "err", p.Err())
				}
				return
			}
			if m.drain(p, ev, maxJSONData, write) != nil {
				return
			}
			if sse.pending() > 0 && sse.send() != nil {
				return
			}
		case <-tick.C:
			if sse.heartbeat() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// nextCursor is where a stream resumes after ev.
func nextCursor(ev api.OutputEvent) int64 { return ev.Offset + int64(len(ev.Data)) }

// outputWebSocket relays the output as WebSocket messages: binary ones
// when the client asked for api.OutputProtocolBinary, JSON text otherwise.
//
// In binary form a message's bytes follow on from the cursor the stream
// started at and from the message before, and dropped and exit events
// (text) say where the stream goes on. Output that does not follow on
// (only the first, when the cursor was past the end of the output) goes
// as a JSON text event with its offset instead, so a client always knows
// where it is.
func (a *API) outputWebSocket(ctx context.Context, w http.ResponseWriter, r *http.Request, st sandbox.Stream[api.OutputEvent], cursor int64) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{api.OutputProtocolBinary}})
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx = conn.CloseRead(ctx)
	binary := conn.Subprotocol() == api.OutputProtocolBinary
	var buf []byte // one message; reused
	text := func(ev api.OutputEvent) error {
		buf = appendOutputJSON(buf[:0], ev)
		return conn.Write(ctx, websocket.MessageText, buf)
	}
	write, limit := text, maxJSONData
	if binary {
		pos := cursor
		limit = maxBinaryData
		write = func(ev api.OutputEvent) error {
			tag := outputTag(ev.Type)
			if tag == 0 || ev.Offset != pos {
				pos = nextCursor(ev)
				return text(ev)
			}
			if cap(buf) < 1+maxBinaryData {
				buf = make([]byte, 0, 1+maxBinaryData)
			}
			for data := ev.Data; len(data) > 0; {
				n := min(len(data), maxBinaryData)
				buf = append(append(buf[:0], tag), data[:n]...)
				if err := conn.Write(ctx, websocket.MessageBinary, buf); err != nil {
					return err
				}
				data = data[n:]
			}
			pos = nextCursor(ev)
			return nil
		}
	}
	p := sandbox.StartPump(ctx, st, pumpAhead)
	var m merger
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
			if m.drain(p, ev, limit, write) != nil {
				return
			}
			if cap(buf) > 2*maxBinaryData {
				buf = nil // a rare big JSON event is not kept for the stream's life
			}
		case <-ctx.Done():
			return
		}
	}
}

// outputTag is the first byte of a binary message of stream typ; 0 for
// events that are not output.
func outputTag(typ string) byte {
	switch typ {
	case api.OutputStdout:
		return api.OutputTagStdout
	case api.OutputStderr:
		return api.OutputTagStderr
	}
	return 0
}

// merger joins output events a pump has already read into fewer, larger
// ones: output of one stream whose bytes follow on from the event before.
type merger struct {
	buf []byte // the merged data; reused, made once at its limit
}

// drain passes ev to write, then each event the pump holds, without
// waiting for more: runs of contiguous output of one stream merged into
// one event of at most limit bytes of data. write must be done with the
// event's data when it returns: each event's data goes back to the stream
// (Recycle) once written or merged.
func (m *merger) drain(p *sandbox.Pump[api.OutputEvent], ev api.OutputEvent, limit int, write func(api.OutputEvent) error) error {
	merged := false // ev.Data is m.buf
	for {
		next, ok := p.Ready()
		if ok && follows(ev, next) && len(ev.Data)+len(next.Data) <= limit {
			if !merged {
				if cap(m.buf) < limit {
					m.buf = make([]byte, 0, limit)
				}
				m.buf = append(m.buf[:0], ev.Data...)
				p.Recycle(ev.Data)
				merged = true
			}
			m.buf = append(m.buf, next.Data...)
			p.Recycle(next.Data)
			ev.Data = m.buf
			continue
		}
		if err := write(ev); err != nil {
			return err
		}
		if !merged {
			p.Recycle(ev.Data)
		}
		if !ok {
			return nil
		}
		ev, merged = next, false
	}
}

// follows reports whether next is output of ev's stream that begins where
// ev ends.
func follows(ev, next api.OutputEvent) bool {
	return outputTag(ev.Type) != 0 && next.Type == ev.Type && next.Process == nil && next.Dropped == 0 &&
		next.Offset == nextCursor(ev)
}

// appendOutputJSON appends ev as JSON, byte for byte what json.Marshal
// makes of it, without its allocations for the events that carry output.
func appendOutputJSON(b []byte, ev api.OutputEvent) []byte {
	switch ev.Type {
	case api.OutputStdout, api.OutputStderr, api.OutputDropped:
	default:
		return appendJSON(b, ev)
	}
	if ev.Process != nil {
		return appendJSON(b, ev)
	}
	b = append(append(append(b, `{"type":"`...), ev.Type...), `","offset":`...)
	b = strconv.AppendInt(b, ev.Offset, 10)
	if len(ev.Data) > 0 {
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, ev.Data)
		b = append(b, '"')
	}
	if ev.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, ev.Dropped, 10)
	}
	return append(b, '}')
}

// appendJSON appends v as JSON; a value that cannot be is written as
// null (the wire types always can be).
func appendJSON(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && headerHas(r.Header, "Connection", "upgrade")
}

// headerHas reports whether the comma-separated header name holds token,
// case-insensitively.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
