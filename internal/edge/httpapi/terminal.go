package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// maxTerminalMessage bounds one message a terminal client sends.
const maxTerminalMessage = 1 << 20

// defaultShell runs the sandbox user's login shell.
var defaultShell = []string{"/bin/sh", "-c", `exec "${SHELL:-/bin/sh}" -l`}

// terminal answers GET /v1/sandboxes/{id}/terminal, a WebSocket: it starts
// ?cmd= (repeated for each argument; the user's login shell by default) in
// ?cwd= on a terminal of ?rows= by ?cols= (24 by 80), as a background
// process that outlives the connection, and bridges it (see bridge).
func (a *API) terminal(w http.ResponseWriter, r *http.Request) {
	if !isWebSocket(r) {
		a.writeError(w, r, errdefs.Invalid("websocket_required", "the terminal is a WebSocket: send an upgrade request"))
		return
	}
	q := r.URL.Query()
	size, err := termSize(q.Get("rows"), q.Get("cols"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	cmd := q["cmd"]
	if len(cmd) == 0 {
		cmd = defaultShell
	}
	p, err := a.cfg.Sandboxes.StartProcess(r.Context(), r.PathValue("id"), api.ProcessRequest{Cmd: cmd, Cwd: q.Get("cwd"), PTY: &size})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.bridge(w, r, p, 0)
}

// attachTerminal answers GET …/processes/{pid}/terminal, a WebSocket to a
// process that already runs: its output from ?cursor= (0: all that is
// still buffered, which redraws a screen), and its input.
func (a *API) attachTerminal(w http.ResponseWriter, r *http.Request) {
	if !isWebSocket(r) {
		a.writeError(w, r, errdefs.Invalid("websocket_required", "the terminal is a WebSocket: send an upgrade request"))
		return
	}
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	cursor, err := parseCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.cfg.Sandboxes.GetProcess(r.Context(), r.PathValue("id"), pid)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.bridge(w, r, p, cursor)
}

func termSize(rows, cols string) (api.TermSize, error) {
	size := api.TermSize{Rows: 24, Cols: 80}
	for _, f := range []struct {
		v   string
		dst *uint16
	}{{rows, &size.Rows}, {cols, &size.Cols}} {
		if f.v == "" {
			continue
		}
		n, err := strconv.ParseUint(f.v, 10, 16)
		if err != nil || n == 0 || n > 1000 {
			return size, errdefs.Invalid("invalid_pty", "rows and cols must be from 1 to 1000")
		}
		*f.dst = uint16(n)
	}
	return size, nil
}

// bridge joins a WebSocket and a process. To the client: a "started" text
// message, then the output as binary messages ("dropped" when some was
// lost) and an "exit" text message at the end. From the client: binary
// messages are input; text messages resize the terminal, signal the
// process group or end the input. The process outlives the connection.
func (a *API) bridge(w http.ResponseWriter, r *http.Request, p api.Process, cursor int64) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := r.PathValue("id")
	st, err := a.cfg.Sandboxes.ProcessOutput(ctx, id, p.PID, cursor, true)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxTerminalMessage)
	if wsjson.Write(ctx, conn, api.TerminalMessage{Type: api.TerminalStarted, Process: &p}) != nil {
		return
	}
	// The input's goroutine ends before the handler returns: the
	// connection closes under its read, and its input stream is ended
	// (within stdinCloseWait), so nothing of the request outlives it.
	inputDone := make(chan struct{})
	go func() {
		defer close(inputDone)
		defer cancel()
		a.terminalInput(ctx, conn, id, p.PID)
	}()
	defer func() {
		cancel()
		conn.CloseNow()
		<-inputDone
	}()
	pm := sandbox.StartPump(ctx, st, pumpAhead)
	for {
		select {
		case ev, ok := <-pm.Events():
			if !ok {
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
			var err error
			switch ev.Type {
			case api.OutputStdout, api.OutputStderr:
				err = conn.Write(ctx, websocket.MessageBinary, ev.Data)
			case api.OutputDropped:
				err = wsjson.Write(ctx, conn, api.TerminalMessage{Type: api.TerminalDropped, Dropped: ev.Dropped})
			case api.OutputExit:
				err = wsjson.Write(ctx, conn, api.TerminalMessage{Type: api.TerminalExit, Process: ev.Process})
			}
			if err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// stdinCloseWait bounds ending a terminal's input stream whose process
// does not read.
const stdinCloseWait = 5 * time.Second

// terminalInput carries the client's messages to the process until the
// connection ends. Input goes through one stream to the agent for the
// whole connection when the agent has one, else a request per message.
func (a *API) terminalInput(ctx context.Context, conn *websocket.Conn, id string, pid int) {
	sbs := a.cfg.Sandboxes
	in, err := sbs.StdinStream(ctx, id, pid)
	if err != nil {
		in = nil
		a.cfg.Log.Debug("terminal input request by request", "err", err)
	}
	endStream := func() {
		if in != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stdinCloseWait)
			in.Close(cctx)
			cancel()
			in = nil
		}
	}
	defer endStream()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if in != nil {
				_, err = in.Write(data)
			} else {
				_, err = sbs.WriteStdin(ctx, id, pid, bytes.NewReader(data), false)
			}
			if err != nil {
				return
			}
			continue
		}
		var m api.TerminalMessage
		if json.Unmarshal(data, &m) != nil {
			conn.Close(websocket.StatusUnsupportedData, "text messages are JSON terminal messages")
			return
		}
		switch m.Type {
		case api.TerminalResize:
			_, err = sbs.ResizeProcess(ctx, id, pid, api.TermSize{Rows: m.Rows, Cols: m.Cols})
		case api.TerminalSignal:
			_, err = sbs.SignalProcess(ctx, id, pid, api.SignalRequest{Signal: m.Signal, Group: true})
		case api.TerminalEOF:
			endStream() // what it carried goes first
			_, err = sbs.WriteStdin(ctx, id, pid, bytes.NewReader(nil), true)
		default:
			conn.Close(websocket.StatusUnsupportedData, "unknown terminal message type "+strconv.Quote(m.Type))
			return
		}
		if err != nil {
			a.cfg.Log.Debug("terminal message refused", "type", m.Type, "err", err)
		}
	}
}
