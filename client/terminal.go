package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
)

// TerminalOptions says what a new terminal runs.
type TerminalOptions struct {
	Cmd  []string // the user's login shell when empty
	Cwd  string
	Size api.TermSize // 24 by 80 when zero
}

// Terminal is a WebSocket to a process on a pseudo-terminal. Process is
// the process as it was when the terminal opened.
type Terminal struct {
	Process api.Process
	conn    *websocket.Conn
}

// TerminalOutput is what Terminal.Next returns: output bytes, or a
// message (dropped output, the exit).
type TerminalOutput struct {
	Data    []byte
	Message *api.TerminalMessage
}

// OpenTerminal starts a command on a terminal in the sandbox, as a
// background process that outlives the connection, and connects to it.
func (c *Client) OpenTerminal(ctx context.Context, id string, o TerminalOptions) (*Terminal, error) {
	if id == "" {
		return nil, errNoID
	}
	q := url.Values{}
	for _, a := range o.Cmd {
		q.Add("cmd", a)
	}
	if o.Cwd != "" {
		q.Set("cwd", o.Cwd)
	}
	if o.Size.Rows > 0 {
		q.Set("rows", strconv.Itoa(int(o.Size.Rows)))
	}
	if o.Size.Cols > 0 {
		q.Set("cols", strconv.Itoa(int(o.Size.Cols)))
	}
	return c.dialTerminal(ctx, sandboxPath(id, "terminal"), q)
}

// AttachTerminal connects to a running process, replaying its output from
// cursor (0: all that is still buffered).
func (c *Client) AttachTerminal(ctx context.Context, id string, pid int, cursor int64) (*Terminal, error) {
	if id == "" {
		return nil, errNoID
	}
	return c.dialTerminal(ctx, processPath(id, pid, "terminal"), url.Values{"cursor": {strconv.FormatInt(cursor, 10)}})
}

func (c *Client) dialTerminal(ctx context.Context, path string, q url.Values) (*Terminal, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	u := "ws" + strings.TrimPrefix(c.base, "http") + path + "?" + q.Encode()
	h := http.Header{}
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			defer resp.Body.Close()
			return nil, readError(resp)
		}
		return nil, fmt.Errorf("client: open terminal: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	t := &Terminal{conn: conn}
	out, err := t.Next(ctx)
	if err != nil {
		conn.CloseNow()
		return nil, err
	}
	if out.Message == nil || out.Message.Type != api.TerminalStarted || out.Message.Process == nil {
		conn.CloseNow()
		return nil, fmt.Errorf("client: the terminal did not start with a started message")
	}
	t.Process = *out.Message.Process
	return t, nil
}

// Next returns the next output of the terminal. After the exit message the
// server closes the connection, and Next returns its error.
func (t *Terminal) Next(ctx context.Context) (TerminalOutput, error) {
	typ, data, err := t.conn.Read(ctx)
	if err != nil {
		return TerminalOutput{}, err
	}
	if typ == websocket.MessageBinary {
		return TerminalOutput{Data: data}, nil
	}
	var m api.TerminalMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return TerminalOutput{}, fmt.Errorf("client: decode terminal message: %w", err)
	}
	return TerminalOutput{Message: &m}, nil
}

// Input sends keystrokes (or any bytes) to the process.
func (t *Terminal) Input(ctx context.Context, p []byte) error {
	return t.conn.Write(ctx, websocket.MessageBinary, p)
}

// Resize changes the terminal's size.
func (t *Terminal) Resize(ctx context.Context, size api.TermSize) error {
	return t.send(ctx, api.TerminalMessage{Type: api.TerminalResize, Rows: size.Rows, Cols: size.Cols})
}

// Signal sends a signal to the terminal's process group.
func (t *Terminal) Signal(ctx context.Context, signal string) error {
	return t.send(ctx, api.TerminalMessage{Type: api.TerminalSignal, Signal: signal})
}

// CloseInput sends end-of-file.
func (t *Terminal) CloseInput(ctx context.Context) error {
	return t.send(ctx, api.TerminalMessage{Type: api.TerminalEOF})
}

func (t *Terminal) send(ctx context.Context, m api.TerminalMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return t.conn.Write(ctx, websocket.MessageText, b)
}

// Close disconnects; the process goes on.
func (t *Terminal) Close() error { return t.conn.Close(websocket.StatusNormalClosure, "") }
