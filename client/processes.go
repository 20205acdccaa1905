package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
)

// StartProcess starts a background process in a sandbox. It runs until it
// exits or is signalled, whoever is connected; read its output with
// ProcessOutput, any number of times, from any cursor.
func (c *Client) StartProcess(ctx context.Context, id string, req api.ProcessRequest) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, sandboxPath(id, "processes"), nil, req, &p)
}

// ListProcesses lists a sandbox's running and recently exited processes.
func (c *Client) ListProcesses(ctx context.Context, id string) (api.ProcessList, error) {
	var l api.ProcessList
	if id == "" {
		return l, errNoID
	}
	return l, c.do(ctx, http.MethodGet, sandboxPath(id, "processes"), nil, nil, &l)
}

// GetProcess returns one process.
func (c *Client) GetProcess(ctx context.Context, id string, pid int) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodGet, processPath(id, pid), nil, nil, &p)
}

// WriteStdin sends r to the process's stdin and closes it afterwards when
// closeAfter is set.
func (c *Client) WriteStdin(ctx context.Context, id string, pid int, r io.Reader, closeAfter bool) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	q := url.Values{}
	if closeAfter {
		q.Set("close", "true")
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: processPath(id, pid, "stdin"), query: q,
		body: r, contentType: "application/octet-stream"})
	if err != nil {
		return p, err
	}
	defer closeBody(resp.Body)
	return p, decodeJSON(resp, &p)
}

// SignalProcess sends signal (TERM, KILL, INT, HUP…) to the process, or
// to its whole process group.
func (c *Client) SignalProcess(ctx context.Context, id string, pid int, signal string, group bool) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, processPath(id, pid, "signal"), nil, api.SignalRequest{Signal: signal, Group: group}, &p)
}

// ResizeProcess changes the size of the process's terminal.
func (c *Client) ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, processPath(id, pid, "resize"), nil, size, &p)
}

// WaitProcess waits up to timeout (at most 10 minutes) for the process to
// exit and returns it as it then is: check Running.
func (c *Client) WaitProcess(ctx context.Context, id string, pid int, timeout time.Duration) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	q := url.Values{"timeout_ms": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	return p, c.do(ctx, http.MethodGet, processPath(id, pid, "wait"), q, nil, &p)
}

// OutputTransport is how a process's output is read.
type OutputTransport int

const (
	// OutputSSE reads Server-Sent Events: each event JSON with the
	// output in base64; the default, and what passes any HTTP proxy.
	OutputSSE OutputTransport = iota
	// OutputWebSocket reads binary WebSocket messages
	// (api.OutputProtocolBinary): the bytes as they are, the fastest. A
	// server without them answers as OutputWebSocketJSON, which this
	// reads as well.
	OutputWebSocket
	// OutputWebSocketJSON reads WebSocket text messages of one
	// api.OutputEvent as JSON each.
	OutputWebSocketJSON
)

// OutputStream is a process's output from a cursor on. Cursor tells where
// a new stream would resume after the events read so far.
type OutputStream struct {
	sse    *sseReader
	ws     *websocket.Conn
	ctx    context.Context // the stream's, for reading WebSocket messages
	hint   int             // the size of the last WebSocket message
	lent   []byte          // the last binary message, whose bytes Data holds
	spare  []byte          // a message buffer handed back by Recycle
	cursor int64
	err    error
}

// ProcessOutput streams the output of a process from cursor on (stdout and
// stderr counted together, from 0) as Server-Sent Events. With follow it
// goes on until the process's output ends, with an "exit" event; a
// "dropped" event says how many bytes were pushed out of the process's
// buffer before they were read. After a broken connection, call it again
// with Cursor().
func (c *Client) ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (*OutputStream, error) {
	return c.ProcessOutputOver(ctx, id, pid, cursor, follow, OutputSSE)
}

// ProcessOutputOver is ProcessOutput over the transport t. Whichever it
// is, Next returns the same events: output as "stdout" and "stderr"
// events with their offsets, "dropped" and "exit". Cancelling ctx ends
// the stream.
func (c *Client) ProcessOutputOver(ctx context.Context, id string, pid int, cursor int64, follow bool, t OutputTransport) (*OutputStream, error) {
	if id == "" {
		return nil, errNoID
	}
	q := url.Values{"cursor": {strconv.FormatInt(cursor, 10)}, "follow": {strconv.FormatBool(follow)}}
	path := processPath(id, pid, "output")
	switch t {
	case OutputSSE:
	case OutputWebSocket:
		conn, err := c.dialWebSocket(ctx, path, q, api.OutputProtocolBinary)
		if err != nil {
			return nil, err
		}
		return &OutputStream{ws: conn, ctx: ctx, cursor: cursor}, nil
	case OutputWebSocketJSON:
		conn, err := c.dialWebSocket(ctx, path, q)
		if err != nil {
			return nil, err
		}
		return &OutputStream{ws: conn, ctx: ctx, cursor: cursor}, nil
	default:
		return nil, fmt.Errorf("client: unknown output transport %d", t)
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q, accept: "text/event-stream"})
	if err != nil {
		return nil, err
	}
	return &OutputStream{sse: newSSEReader(resp.Body), cursor: cursor}, nil
}

// dialWebSocket opens a WebSocket to path, offering the subprotocols.
func (c *Client) dialWebSocket(ctx context.Context, path string, q url.Values, subprotocols ...string) (*websocket.Conn, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	u := "ws" + strings.TrimPrefix(c.base, "http") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	h := http.Header{}
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h, Subprotocols: subprotocols})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			defer resp.Body.Close()
			return nil, readError(resp)
		}
		return nil, fmt.Errorf("client: open %s: %w", path, err)
	}
	conn.SetReadLimit(MaxEventSize)
	return conn, nil
}

// Next returns the next event; io.EOF after the last. The event's Data is
// its own: later calls do not touch it, unless it is handed back with
// Recycle.
func (s *OutputStream) Next() (api.OutputEvent, error) {
	if s.err != nil {
		return api.OutputEvent{}, s.err
	}
	var ev api.OutputEvent
	var err error
	if s.ws != nil {
		ev, err = s.nextMessage()
	} else {
		ev, err = s.nextEvent()
	}
	if err != nil {
		s.err = err
		return api.OutputEvent{}, err
	}
	return ev, nil
}

// Recycle hands back the Data of the event Next returned last, once the
// caller is done with it, so the next binary WebSocket message may be
// read into it instead of a fresh allocation; the caller must not touch
// data afterwards. Data of other events, or of an earlier one, is left
// alone.
func (s *OutputStream) Recycle(data []byte) {
	if len(data) > 0 && len(s.lent) > 1 && &data[0] == &s.lent[1] {
		s.spare, s.lent = s.lent, nil
	}
}

// nextEvent reads a Server-Sent Event.
func (s *OutputStream) nextEvent() (api.OutputEvent, error) {
	id, _, data, err := s.sse.nextBytes()
	if err != nil {
		return api.OutputEvent{}, err
	}
	ev, err := decodeOutputEvent(data)
	if err != nil {
		return ev, err
	}
	if id != "" {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			s.cursor = n
		}
	}
	return ev, nil
}

// nextMessage reads a WebSocket message: binary output, its stream in
// its first byte, at the cursor; or an event as JSON.
func (s *OutputStream) nextMessage() (api.OutputEvent, error) {
	typ, r, err := s.ws.Reader(s.ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
			return api.OutputEvent{}, io.EOF
		}
		return api.OutputEvent{}, fmt.Errorf("client: output stream: %w", err)
	}
	b, err := readMessage(r, s.hint, s.spare)
	s.spare, s.lent = nil, nil
	if err != nil {
		return api.OutputEvent{}, fmt.Errorf("client: output stream: %w", err)
	}
	s.hint = len(b)
	if typ == websocket.MessageText {
		ev, err := decodeOutputEvent(b)
		if err == nil {
			s.cursor = ev.Offset + int64(len(ev.Data))
		}
		return ev, err
	}
	if len(b) == 0 {
		return api.OutputEvent{}, errors.New("client: output stream: empty binary message")
	}
	s.lent = b
	ev := api.OutputEvent{Offset: s.cursor, Data: b[1:len(b):len(b)]}
	switch b[0] {
	case api.OutputTagStdout:
		ev.Type = api.OutputStdout
	case api.OutputTagStderr:
		ev.Type = api.OutputStderr
	default:
		return api.OutputEvent{}, fmt.Errorf("client: output stream: unknown stream %d", b[0])
	}
	s.cursor += int64(len(ev.Data))
	return ev, nil
}

// readMessage reads a message into buf when it has room for hint bytes,
// else into a buffer of its own, sized for hint bytes (one copy, and no
// more, of each byte).
func readMessage(r io.Reader, hint int, buf []byte) ([]byte, error) {
	b := buf[:0]
	if cap(b) <= hint {
		b = make([]byte, 0, max(hint+1, 512))
	}
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// decodeOutputEvent decodes an event's JSON. Output in the one form the
// server writes it, {"type":"stdout","offset":N,"data":"<base64>"}, is
// decoded without the JSON decoder's passes over the data.
func decodeOutputEvent(b []byte) (api.OutputEvent, error) {
	if ev, ok := fastOutputEvent(b); ok {
		return ev, nil
	}
	var ev api.OutputEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("client: decode output event: %w", err)
	}
	return ev, nil
}

func fastOutputEvent(b []byte) (api.OutputEvent, bool) {
	for _, typ := range [...]string{api.OutputStdout, api.OutputStderr} {
		rest, ok := bytes.CutPrefix(b, []byte(`{"type":"`+typ+`","offset":`))
		if !ok {
			continue
		}
		num, rest, ok := bytes.Cut(rest, []byte(`,"data":"`))
		if !ok {
			return api.OutputEvent{}, false
		}
		off, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || off < 0 || strconv.FormatInt(off, 10) != string(num) {
			return api.OutputEvent{}, false
		}
		data, ok := bytes.CutSuffix(rest, []byte(`"}`))
		if !ok || bytes.IndexByte(data, '\r') >= 0 || bytes.IndexByte(data, '\n') >= 0 {
			return api.OutputEvent{}, false
		}
		d, err := base64.StdEncoding.AppendDecode(nil, data)
		if err != nil {
			return api.OutputEvent{}, false
		}
		return api.OutputEvent{Type: typ, Offset: off, Data: d}, true
	}
	return api.OutputEvent{}, false
}

// Cursor is where the output resumes after what Next returned.
func (s *OutputStream) Cursor() int64 { return s.cursor }

// Close ends the stream; the process goes on.
func (s *OutputStream) Close() error {
	if s.ws != nil {
		return s.ws.CloseNow()
	}
	return s.sse.close()
}

// CopyOutput writes a process's output from cursor on to stdout and
// stderr as it arrives and returns the process once it exits. Dropped
// output is reported on stderr.
func (c *Client) CopyOutput(ctx context.Context, id string, pid int, cursor int64, stdout, stderr io.Writer) (api.Process, error) {
	st, err := c.ProcessOutput(ctx, id, pid, cursor, true)
	if err != nil {
		return api.Process{}, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return api.Process{}, fmt.Errorf("client: the output of process %d ended without its exit", pid)
		}
		if err != nil {
			return api.Process{}, err
		}
		switch ev.Type {
		case api.OutputStdout:
			_, err = stdout.Write(ev.Data)
		case api.OutputStderr:
			_, err = stderr.Write(ev.Data)
		case api.OutputDropped:
			_, err = fmt.Fprintf(stderr, "[hutch: %d bytes of output were dropped before they were read]\n", ev.Dropped)
		case api.OutputExit:
			return *ev.Process, nil
		}
		if err != nil {
			return api.Process{}, err
		}
	}
}

func processPath(id string, pid int, parts ...string) string {
	return sandboxPath(id, append([]string{"processes", strconv.Itoa(pid)}, parts...)...)
}
