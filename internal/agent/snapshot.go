package agent

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// freezeWait bounds how long a snapshot waits to see every process of
// the sandbox stopped before it copies anyway (Frozen false).
const freezeWait = time.Second

// handleSnapshot answers GET /snapshot: what changed in the root since
// the agent started, as a tar in OCI layer form (files.WriteLayer), with
// every other process of the sandbox stopped while it is written, and
// how long they were in the trailers (agentproto.TrailerSnapshot*).
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	if os.Getpid() != 1 {
		// Stopping "every other process" is kill(-1), which is the
		// sandbox's only when the agent is its pid namespace's init.
		s.writeError(w, r, errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported", "the agent is not its sandbox's init: it cannot stop the sandbox's processes for a snapshot"))
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Trailer", agentproto.TrailerSnapshotPause+", "+agentproto.TrailerSnapshotFrozen+", "+
		agentproto.TrailerSnapshotEntries+", "+agentproto.TrailerSnapshotBytes+", "+agentproto.TrailerSnapshotError)
	start := time.Now()
	thaw, frozen := stopSandbox(freezeWait)
	st, err := s.layers.WriteLayer(w, s.baseline)
	thaw()
	pause := time.Since(start)
	if err != nil {
		// The status is sent: the layer, cut short, has no end, and the
		// error trailer says why.
		s.log.Warn("snapshot layer failed", "err", err)
		w.Header().Set(agentproto.TrailerSnapshotError, err.Error())
		return
	}
	w.Header().Set(agentproto.TrailerSnapshotPause, strconv.FormatInt(int64(pause), 10))
	w.Header().Set(agentproto.TrailerSnapshotFrozen, strconv.FormatBool(frozen))
	w.Header().Set(agentproto.TrailerSnapshotEntries, strconv.FormatInt(st.Entries, 10))
	w.Header().Set(agentproto.TrailerSnapshotBytes, strconv.FormatInt(st.Bytes, 10))
	s.log.Info("snapshot layer written", "entries", st.Entries, "bytes", st.Bytes, "pause", pause, "frozen", frozen)
}

// stopSandbox stops (SIGSTOP) every process of the agent's pid namespace
// but the agent, its init, in one kill(-1), and waits up to wait to see
// them all stopped (frozen). thaw continues them, all but those a
// command had stopped before, which stay stopped.
func stopSandbox(wait time.Duration) (thaw func(), frozen bool) {
	before := stoppedNow()
	if err := unix.Kill(-1, unix.SIGSTOP); err != nil && !errors.Is(err, unix.ESRCH) {
		return func() {}, false
	}
	thaw = func() {
		unix.Kill(-1, unix.SIGCONT)
		for pid := range before {
			unix.Kill(pid, unix.SIGSTOP)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		if allStopped() {
			return thaw, true
		}
		if time.Now().After(deadline) {
			return thaw, false
		}
		time.Sleep(time.Millisecond)
	}
}

// stoppedNow are the processes of the pid namespace that are stopped.
func stoppedNow() map[int]bool {
	out := map[int]bool{}
	eachProcess(func(pid int, state byte) {
		if state == 'T' {
			out[pid] = true
		}
	})
	return out
}

// allStopped says whether every process of the pid namespace but the
// agent is stopped (or a zombie, or gone).
func allStopped() bool {
	all := true
	eachProcess(func(_ int, state byte) {
		if state != 'T' && state != 't' && state != 'Z' && state != 'X' {
			all = false
		}
	})
	return all
}

// eachProcess calls f with each process of /proc but the agent and its
// state (the letter after the command in /proc/<pid>/stat).
func eachProcess(f func(pid int, state byte)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			f(pid, b[i+2])
		}
	}
}
