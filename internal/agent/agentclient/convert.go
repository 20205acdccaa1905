package agentclient

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// Conversions between the public API's types and the protocol's. Each is
// written out field by field, so a field added to one side is a decision
// here, not a silent change of what an agent receives.

func wireExec(r api.ExecRequest) agentproto.ExecRequest {
	return agentproto.ExecRequest{Cmd: r.Cmd, Env: r.Env, Cwd: r.Cwd, Stdin: r.Stdin, TimeoutMS: r.TimeoutMS, Root: r.Root}
}

func wireProcessRequest(r api.ProcessRequest) agentproto.ProcessRequest {
	w := agentproto.ProcessRequest{Cmd: r.Cmd, Env: r.Env, Cwd: r.Cwd, Tag: r.Tag, Root: r.Root}
	if r.PTY != nil {
		w.PTY = &agentproto.TermSize{Rows: r.PTY.Rows, Cols: r.PTY.Cols}
	}
	return w
}

func apiExecEvent(ev agentproto.ExecEvent) api.ExecEvent {
	out := api.ExecEvent{Type: ev.Type, Data: ev.Data}
	if ev.Exit != nil {
		out.Exit = &api.ExecResult{ExitCode: ev.Exit.ExitCode, DurationMS: ev.Exit.DurationMS,
			TimedOut: ev.Exit.TimedOut, Signal: ev.Exit.Signal, Error: ev.Exit.Error}
	}
	return out
}

func apiProcess(p agentproto.Process) api.Process {
	return api.Process{PID: p.PID, Tag: p.Tag, Cmd: p.Cmd, PTY: p.PTY, Running: p.Running, ExitCode: p.ExitCode,
		Signal: p.Signal, StartedAt: p.StartedAt, EndedAt: p.EndedAt, OutputBytes: p.OutputBytes, StdinOpen: p.StdinOpen}
}

func apiProcessList(l agentproto.ProcessList) api.ProcessList {
	out := api.ProcessList{Processes: make([]api.Process, len(l.Processes))}
	for i, p := range l.Processes {
		out.Processes[i] = apiProcess(p)
	}
	return out
}

func apiOutputEvent(ev agentproto.OutputEvent) api.OutputEvent {
	out := api.OutputEvent{Type: ev.Type, Offset: ev.Offset, Data: ev.Data, Dropped: ev.Dropped}
	if ev.Process != nil {
		p := apiProcess(*ev.Process)
		out.Process = &p
	}
	return out
}

func apiFileList(l agentproto.FileList) api.FileList {
	out := api.FileList{Path: l.Path, Entries: make([]api.FileInfo, len(l.Entries))}
	for i, e := range l.Entries {
		out.Entries[i] = api.FileInfo(e)
	}
	return out
}

func apiWatchEvent(ev agentproto.WatchEvent) api.WatchEvent {
	return api.WatchEvent{Type: ev.Type, Path: ev.Path, OldPath: ev.OldPath, IsDir: ev.IsDir, Time: ev.Time}
}
