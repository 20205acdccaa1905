package proc

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

const (
	// keptExits is how many exited processes are kept, with their
	// output, for clients that come back later.
	keptExits = 64
	// maxTag bounds a process's tag.
	maxTag = 128
)

// procTable is the sandbox's background processes: running ones, and the
// most recent exited ones until newer exits push them out.
type procTable struct {
	mu        sync.Mutex
	byPID     map[int]*proc
	exited    []int // pids in the order they exited
	maxExited int
	ringBytes int64
}

func newProcTable(ringBytes int64, maxExited int) *procTable {
	return &procTable{byPID: map[int]*proc{}, ringBytes: ringBytes, maxExited: maxExited}
}

// proc is one background process.
type proc struct {
	out  *outRing
	done chan struct{} // closed once it has exited and its output ended

	mu    sync.Mutex
	info  agentproto.Process
	stdin *os.File // the pipe's write end, or the PTY master; nil once closed
	pty   *os.File // the PTY master, nil without a PTY
}

// snapshot is the process's info now.
func (p *proc) snapshot() agentproto.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := p.info
	info.Cmd = slices.Clone(p.info.Cmd)
	info.OutputBytes = p.out.size()
	info.StdinOpen = p.stdin != nil
	return info
}

func (t *procTable) get(pid int) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.byPID[pid]; ok {
		return p, nil
	}
	return nil, errdefs.NotFound("process_not_found", "process %d is not running and not among the recently exited ones", pid)
}

func (t *procTable) list() []agentproto.Process {
	t.mu.Lock()
	procs := make([]*proc, 0, len(t.byPID))
	for _, p := range t.byPID {
		procs = append(procs, p)
	}
	t.mu.Unlock()
	out := make([]agentproto.Process, 0, len(procs))
	for _, p := range procs {
		out = append(out, p.snapshot())
	}
	slices.SortFunc(out, func(a, b agentproto.Process) int { return a.StartedAt.Compare(b.StartedAt) })
	return out
}

// add records a started process; a retired one that had the same pid goes.
func (t *procTable) add(pid int, p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.exited = slices.DeleteFunc(t.exited, func(q int) bool { return q == pid })
	t.byPID[pid] = p
}

// retire moves an ended process among the exited ones, dropping the
// oldest beyond maxExited.
func (t *procTable) retire(pid int, p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byPID[pid] != p {
		return
	}
	t.exited = append(t.exited, pid)
	for len(t.exited) > t.maxExited {
		delete(t.byPID, t.exited[0])
		t.exited = t.exited[1:]
	}
}

// startBackground starts spec in the background, on a PTY of size pty
// when it is set, and registers it.
func (s *Service) startBackground(spec Spec, tag string, pty *agentproto.TermSize) (agentproto.Process, error) {
	prog, code, msg := lookPath(spec.Argv[0], spec.Dir, spec.Path)
	if code != 0 {
		return agentproto.Process{}, errdefs.Invalid("program_not_found", "%s", msg)
	}
	io, err := newProcIO(pty)
	if err != nil {
		return agentproto.Process{}, err
	}
	attr := &syscall.ProcAttr{Dir: spec.Dir, Env: spec.Env, Files: io.childFiles(), Sys: io.sysProcAttr(spec.Cred)}
	pid, exited, err := s.Fork(prog, spec.Argv, attr)
	io.closeChildEnds()
	if err != nil {
		io.closeAll()
		if errors.Is(err, ErrShuttingDown) {
			return agentproto.Process{}, errdefs.Unavailable("agent_shutting_down", "the agent is shutting down")
		}
		return agentproto.Process{}, errdefs.Wrap(errdefs.ErrInvalid, "start_failed", err, "%s: %s", spec.Argv[0], err.Error())
	}
	p := &proc{
		out:   newOutRing(s.procs.ringBytes),
		done:  make(chan struct{}),
		stdin: io.stdin,
		pty:   io.master,
		info: agentproto.Process{PID: pid, Tag: tag, Cmd: spec.Argv, PTY: pty != nil, Running: true,
			StartedAt: time.Now().UTC()},
	}
	s.procs.add(pid, p)
	go s.supervise(pid, p, io, exited)
	s.log.Info("process started", "pid", pid, "program", spec.Argv[0], "tag", tag, "pty", pty != nil)
	return p.snapshot(), nil
}

// supervise pumps the process's output into its ring and records its exit;
// once it has exited, output still arriving (from what it left running) is
// read for DrainTime more, then the output ends.
func (s *Service) supervise(pid int, p *proc, io *procIO, exited <-chan unix.WaitStatus) {
	var pumps sync.WaitGroup
	for _, src := range io.sources() {
		pumps.Go(func() { pumpRing(src.f, src.stream, p.out) })
	}
	ws := <-exited
	code, sig := ExitStatus(ws)
	end := time.Now().UTC()
	p.mu.Lock()
	p.info.Running = false
	p.info.ExitCode, p.info.Signal, p.info.EndedAt = &code, sig, &end
	p.mu.Unlock()
	io.setReadDeadline(time.Now().Add(DrainTime))
	pumps.Wait()
	io.closeOutputs()
	p.closeStdin()
	p.out.close()
	close(p.done)
	s.procs.retire(pid, p)
	info := p.snapshot()
	s.cfg.Exited(info)
	s.log.Info("process exited", "pid", pid, "exit_code", code, "signal", sig)
}

// pumpChunk is what the pump reads at once. The ring counts what its
// buffers hold (their capacity), so a chunk larger than what a read
// usually brings would waste the ring; readers get merged chunks
// (maxEvent) anyway.
const pumpChunk = 64 << 10

// pumpRing copies f into the ring until EOF, an error (EIO from a PTY
// master once the terminal is gone) or the drain deadline. A large read
// goes into the ring as it is, and the pump reads on into a buffer the
// ring pushed out (or a new one); a small one is copied, so a trickle of
// output does not hold a whole buffer per byte.
func pumpRing(f *os.File, stream string, r *outRing) {
	buf := make([]byte, pumpChunk)
	for {
		n, err := f.Read(buf)
		switch {
		case n >= pumpChunk/4:
			spare := r.put(stream, buf[:n])
			if cap(spare) >= pumpChunk {
				buf = spare[:pumpChunk]
			} else {
				buf = make([]byte, pumpChunk)
			}
		case n > 0:
			r.write(stream, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (p *proc) closeStdin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdin != nil && p.stdin != p.pty {
		p.stdin.Close()
	}
	p.stdin = nil
}

// ExitStatus is the exit code (128 + signal when a signal ended it) and
// the signal's name.
func ExitStatus(ws unix.WaitStatus) (int, string) {
	switch {
	case ws.Exited():
		return ws.ExitStatus(), ""
	case ws.Signaled():
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return -1, ""
}

// waitFor waits until the process has ended or ctx is done.
func (p *proc) waitFor(ctx context.Context) {
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}
