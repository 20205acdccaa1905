package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	hsandbox "github.com/hutchdev/hutch/internal/control/sandbox"
	pb "github.com/hutchdev/hutch/internal/edge/e2b/envdpb/process"
)

// processService is envd's process.Process on hutch's processes: a
// started process is a hutch background process, so it outlives the
// stream that started it (E2B's background commands) and any client may
// connect to it again.
type processService struct{ h *Handler }

func (s processService) Start(ctx context.Context, req *connect.Request[pb.StartRequest], stream *connect.ServerStream[pb.StartResponse]) error {
	c, err := s.h.rpcCall(ctx)
	if err != nil {
		return err
	}
	cfg := req.Msg.GetProcess()
	if cfg == nil || cfg.GetCmd() == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is required"))
	}
	preq := api.ProcessRequest{Cmd: append([]string{cfg.GetCmd()}, cfg.GetArgs()...), Env: cfg.GetEnvs(), Cwd: cfg.GetCwd(), Tag: req.Msg.GetTag(), Root: c.root}
	if pty := req.Msg.GetPty(); pty != nil {
		preq.PTY = &api.TermSize{Rows: uint16(pty.GetSize().GetRows()), Cols: uint16(pty.GetSize().GetCols())}
	}
	p, err := s.h.cfg.Sandboxes.StartProcess(ctx, c.sandbox, preq)
	if err != nil {
		return s.h.rpcError(err)
	}
	if preq.PTY == nil && !req.Msg.GetStdin() {
		// E2B starts a command with no input unless asked (stdin: true).
		// Its input closes beside the output's first read, not before it:
		// the agent serves both at once, and a command's first output does
		// not wait for a round trip.
		closed := make(chan error, 1)
		go func() { closed <- s.closeStdin(ctx, c.sandbox, p.PID) }()
		defer func() {
			if err := <-closed; err != nil {
				s.h.cfg.Log.Warn("e2b: close a command's input", "sandbox", c.sandbox, "pid", p.PID, "err", err)
			}
		}()
	}
	send := func(ev *pb.ProcessEvent) error { return stream.Send(&pb.StartResponse{Event: ev}) }
	return s.follow(ctx, c.sandbox, p, 0, keepaliveEvery(req.Header()), send)
}

// closeStdin closes a process's input, even once the call has ended (in
// at most ten seconds); one that has already ended has no input to close,
// which is no error.
func (s processService) closeStdin(ctx context.Context, sandbox string, pid int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := s.h.cfg.Sandboxes.WriteStdin(ctx, sandbox, pid, bytes.NewReader(nil), true)
	if err != nil && !errors.Is(err, errdefs.ErrConflict) && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	return nil
}

func (s processService) Connect(ctx context.Context, req *connect.Request[pb.ConnectRequest], stream *connect.ServerStream[pb.ConnectResponse]) error {
	c, p, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return err
	}
	// Output from now on, as envd's Connect gives it.
	send := func(ev *pb.ProcessEvent) error { return stream.Send(&pb.ConnectResponse{Event: ev}) }
	return s.follow(ctx, c.sandbox, p, p.OutputBytes, keepaliveEvery(req.Header()), send)
}

// follow sends the start event of p and then its output from cursor until
// it exits, with a keepalive event every interval while it is quiet. When
// the call's deadline (the SDK's timeoutMs) passes first, the process is
// killed, as a command that ran out of time; a client that only goes away
// leaves it running.
func (s processService) follow(ctx context.Context, sandbox string, p api.Process, cursor int64, every time.Duration, send func(*pb.ProcessEvent) error) error {
	if err := send(&pb.ProcessEvent{Event: &pb.ProcessEvent_Start{Start: &pb.ProcessEvent_StartEvent{Pid: uint32(p.PID)}}}); err != nil {
		return err
	}
	out, err := s.h.cfg.Sandboxes.ProcessOutput(ctx, sandbox, p.PID, cursor, true)
	if err != nil {
		return s.h.rpcError(err)
	}
	return relay[api.OutputEvent]{
		every: every,
		send: func(ev api.OutputEvent) error {
			msg, last := outputEvent(ev, p.PTY)
			if msg != nil {
				if err := send(msg); err != nil {
					return err
				}
			}
			if last {
				return errLast
			}
			return nil
		},
		keepalive: func() error {
			return send(&pb.ProcessEvent{Event: &pb.ProcessEvent_Keepalive{Keepalive: &pb.ProcessEvent_KeepAlive{}}})
		},
		failed: s.h.rpcError,
		ended:  func() error { return s.ended(ctx, sandbox, p.PID) },
	}.run(ctx, hsandbox.StartPump(ctx, out, 0))
}

// ended is what a stream whose context ended returns: past its deadline
// the process is killed (its whole group) first. The SDK aborts the
// request at its timeout as the server's deadline passes, and its abort
// may arrive first: an end within deadlineSlack of the deadline is the
// deadline's.
func (s processService) ended(ctx context.Context, sandbox string, pid int) error {
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > deadlineSlack {
		return ctx.Err()
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.h.cfg.Sandboxes.SignalProcess(kctx, sandbox, pid, api.SignalRequest{Signal: "KILL", Group: true}); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		s.h.cfg.Log.Warn("e2b: kill a command past its timeout", "sandbox", sandbox, "pid", pid, "err", err)
	}
	return connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf("the command ran past its timeout and was killed"))
}

// outputEvent translates one event of hutch's output stream; end says it
// was the last. A terminal's output is one stream, sent as pty data.
func outputEvent(ev api.OutputEvent, pty bool) (_ *pb.ProcessEvent, end bool) {
	data := func(d *pb.ProcessEvent_DataEvent) *pb.ProcessEvent {
		return &pb.ProcessEvent{Event: &pb.ProcessEvent_Data{Data: d}}
	}
	switch ev.Type {
	case api.OutputStdout:
		if pty {
			return data(&pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Pty{Pty: ev.Data}}), false
		}
		return data(&pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Stdout{Stdout: ev.Data}}), false
	case api.OutputStderr:
		return data(&pb.ProcessEvent_DataEvent{Output: &pb.ProcessEvent_DataEvent_Stderr{Stderr: ev.Data}}), false
	case api.OutputExit:
		return &pb.ProcessEvent{Event: &pb.ProcessEvent_End{End: endEvent(ev.Process)}}, true
	}
	return nil, false // dropped: the bytes are gone; envd has no event for it
}

// endEvent is envd's end of a process: its exit code and Go's wording of
// how it ended ("exit status 1", "signal: killed").
func endEvent(p *api.Process) *pb.ProcessEvent_EndEvent {
	end := &pb.ProcessEvent_EndEvent{ExitCode: -1, Status: "exited"}
	if p == nil {
		return end
	}
	switch {
	case p.ExitCode != nil:
		end.ExitCode, end.Exited = int32(*p.ExitCode), true
		end.Status = "exit status " + strconv.Itoa(*p.ExitCode)
	case p.Signal != "":
		end.Status = "signal: " + p.Signal
	}
	return end
}

// deadlineSlack is how early before its deadline a stream's end still
// counts as the deadline's.
const deadlineSlack = time.Second

// keepaliveEvery is the interval the client asks keepalives at
// (Keepalive-Ping-Interval, seconds); 50 s, the SDK's, when it does not.
func keepaliveEvery(h interface{ Get(string) string }) time.Duration {
	if n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 50 * time.Second
}

// target is the call of a request about one process and the process its
// selector names.
func (s processService) target(ctx context.Context, sel *pb.ProcessSelector) (call, api.Process, error) {
	c, err := s.h.rpcCall(ctx)
	if err != nil {
		return c, api.Process{}, err
	}
	p, err := s.find(ctx, c.sandbox, sel)
	return c, p, err
}

// find returns the process a selector names: by pid, or by tag among the
// sandbox's running processes.
func (s processService) find(ctx context.Context, sandbox string, sel *pb.ProcessSelector) (api.Process, error) {
	if sel == nil {
		return api.Process{}, connect.NewError(connect.CodeInvalidArgument, errors.New("process selector is required"))
	}
	if tag, ok := sel.GetSelector().(*pb.ProcessSelector_Tag); ok {
		list, err := s.h.cfg.Sandboxes.ListProcesses(ctx, sandbox)
		if err != nil {
			return api.Process{}, s.h.rpcError(err)
		}
		for _, p := range list.Processes {
			if p.Tag == tag.Tag && p.Running {
				return p, nil
			}
		}
		return api.Process{}, connect.NewError(connect.CodeNotFound, fmt.Errorf("no running process is tagged %q", tag.Tag))
	}
	p, err := s.h.cfg.Sandboxes.GetProcess(ctx, sandbox, int(sel.GetPid()))
	if err != nil {
		return api.Process{}, s.h.rpcError(err)
	}
	return p, nil
}

func (s processService) List(ctx context.Context, _ *connect.Request[pb.ListRequest]) (*connect.Response[pb.ListResponse], error) {
	c, err := s.h.rpcCall(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.h.cfg.Sandboxes.ListProcesses(ctx, c.sandbox)
	if err != nil {
		return nil, s.h.rpcError(err)
	}
	out := &pb.ListResponse{}
	for _, p := range list.Processes {
		if !p.Running || len(p.Cmd) == 0 {
			continue
		}
		info := &pb.ProcessInfo{Pid: uint32(p.PID), Config: &pb.ProcessConfig{Cmd: p.Cmd[0], Args: p.Cmd[1:], Envs: map[string]string{}}}
		if p.Tag != "" {
			info.Tag = &p.Tag
		}
		out.Processes = append(out.Processes, info)
	}
	return connect.NewResponse(out), nil
}

func (s processService) SendInput(ctx context.Context, req *connect.Request[pb.SendInputRequest]) (*connect.Response[pb.SendInputResponse], error) {
	if err := s.input(ctx, req.Msg.GetProcess(), req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.SendInputResponse{}), nil
}

// input writes one piece of input, to stdin or a terminal alike (a
// terminal's input is its process's stdin).
func (s processService) input(ctx context.Context, sel *pb.ProcessSelector, in *pb.ProcessInput) error {
	c, p, err := s.target(ctx, sel)
	if err != nil {
		return err
	}
	data := in.GetStdin()
	if data == nil {
		data = in.GetPty()
	}
	if _, err := s.h.cfg.Sandboxes.WriteStdin(ctx, c.sandbox, p.PID, bytes.NewReader(data), false); err != nil {
		return s.h.rpcError(err)
	}
	return nil
}

func (s processService) StreamInput(ctx context.Context, stream *connect.ClientStream[pb.StreamInputRequest]) (*connect.Response[pb.StreamInputResponse], error) {
	var sel *pb.ProcessSelector
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *pb.StreamInputRequest_Start:
			sel = ev.Start.GetProcess()
		case *pb.StreamInputRequest_Data:
			if sel == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the first message of StreamInput must be start"))
			}
			if err := s.input(ctx, sel, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&pb.StreamInputResponse{}), nil
}

func (s processService) CloseStdin(ctx context.Context, req *connect.Request[pb.CloseStdinRequest]) (*connect.Response[pb.CloseStdinResponse], error) {
	c, p, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if _, err := s.h.cfg.Sandboxes.WriteStdin(ctx, c.sandbox, p.PID, bytes.NewReader(nil), true); err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.CloseStdinResponse{}), nil
}

// signals are the signals envd's API can send.
var signals = map[pb.Signal]string{pb.Signal_SIGNAL_SIGKILL: "KILL", pb.Signal_SIGNAL_SIGTERM: "TERM"}

// SendSignal signals the process's whole group: a command runs under a
// shell (bash -l -c), and killing only the shell would leave what it
// started running.
func (s processService) SendSignal(ctx context.Context, req *connect.Request[pb.SendSignalRequest]) (*connect.Response[pb.SendSignalResponse], error) {
	sig, ok := signals[req.Msg.GetSignal()]
	if !ok {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("signal %v: envd sends SIGKILL or SIGTERM", req.Msg.GetSignal()))
	}
	c, p, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if !p.Running {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d is not running", p.PID))
	}
	if _, err := s.h.cfg.Sandboxes.SignalProcess(ctx, c.sandbox, p.PID, api.SignalRequest{Signal: sig, Group: true}); err != nil {
		return nil, s.h.rpcError(err)
	}
	return connect.NewResponse(&pb.SendSignalResponse{}), nil
}

func (s processService) Update(ctx context.Context, req *connect.Request[pb.UpdateRequest]) (*connect.Response[pb.UpdateResponse], error) {
	c, p, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if pty := req.Msg.GetPty(); pty != nil {
		size := api.TermSize{Rows: uint16(pty.GetSize().GetRows()), Cols: uint16(pty.GetSize().GetCols())}
		if _, err := s.h.cfg.Sandboxes.ResizeProcess(ctx, c.sandbox, p.PID, size); err != nil {
			return nil, s.h.rpcError(err)
		}
	}
	return connect.NewResponse(&pb.UpdateResponse{}), nil
}
