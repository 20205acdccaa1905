package supervisor

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

const (
	// appLogBytes bounds each app process's log (its lines' bytes, plus
	// logLineCost each).
	appLogBytes = 1 << 20
	// logLineCost is what a line costs the log beyond its bytes.
	logLineCost = 64
	// maxLogLine cuts a longer line into lines of this size.
	maxLogLine = 16 << 10
)

// appLog is one app process's log, kept by name across its runs: the most
// recent lines of its output and the supervisor's notes between runs,
// numbered from the first line ever written. Writers never wait: the
// oldest lines go when it is full. Close wakes readers that follow it so
// they end.
type appLog struct {
	mu     sync.Mutex
	lines  []agentproto.LogLine // oldest first
	first  uint64               // number of lines[0]
	held   int64
	limit  int64
	closed bool
	wake   chan struct{} // closed and replaced on every change
}

func newAppLog(limit int64) *appLog {
	return &appLog{limit: limit, wake: make(chan struct{})}
}

// add appends one line.
func (l *appLog) add(stream, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Counted as kept (after ToValidUTF8, which may lengthen it), so what
	// is added and what is taken off agree.
	line = strings.ToValidUTF8(line, "\uFFFD")
	l.lines = append(l.lines, agentproto.LogLine{Time: time.Now().UTC(), Stream: stream, Line: line})
	l.held += int64(len(line)) + logLineCost
	for l.held > l.limit && len(l.lines) > 1 {
		l.held -= int64(len(l.lines[0].Line)) + logLineCost
		l.lines[0] = agentproto.LogLine{}
		l.lines = l.lines[1:]
		l.first++
	}
	l.notify()
}

// system adds a note of the supervisor's.
func (l *appLog) system(line string) { l.add(agentproto.LogSystem, line) }

// setClosed ends (true) or resumes (false) the log for readers that
// follow it.
func (l *appLog) setClosed(closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = closed
	l.notify()
}

func (l *appLog) notify() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// tail is the number of the line n lines before the end.
func (l *appLog) tail(n int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.first + uint64(len(l.lines))
	return end - min(uint64(n), uint64(len(l.lines)))
}

// read returns the lines from number cursor on (from the oldest kept when
// cursor points before it), the number after them, whether the log is
// closed, and a channel closed at the next change.
func (l *appLog) read(cursor uint64) (lines []agentproto.LogLine, next uint64, closed bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.first + uint64(len(l.lines))
	cursor = min(max(cursor, l.first), end)
	lines = append([]agentproto.LogLine(nil), l.lines[cursor-l.first:]...)
	return lines, end, l.closed, l.wake
}

// lineWriter cuts one output stream of a process into the lines of its
// log; a line longer than maxLogLine goes in pieces.
type lineWriter struct {
	log     *appLog
	stream  string
	partial []byte
}

func (w *lineWriter) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if n := len(w.partial) / maxLogLine * maxLogLine; n > 0 {
				w.emit(w.partial[:n])
				w.partial = append(w.partial[:0], w.partial[n:]...)
			}
			return
		}
		line := p[:i]
		if len(w.partial) > 0 {
			line = append(w.partial, line...)
			w.partial = line[:0]
		}
		w.emit(bytes.TrimSuffix(line, []byte{'\r'}))
		p = p[i+1:]
	}
}

// emit adds line, in pieces of at most maxLogLine bytes.
func (w *lineWriter) emit(line []byte) {
	for len(line) > maxLogLine {
		w.log.add(w.stream, string(line[:maxLogLine]))
		line = line[maxLogLine:]
	}
	w.log.add(w.stream, string(line))
}

// flush writes what is left of a last line without its newline.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.log.add(w.stream, string(w.partial))
		w.partial = nil
	}
}

// pumpLog reads f into log as lines of stream until EOF, an error or the
// drain deadline.
func pumpLog(f *os.File, stream string, log *appLog) {
	w := &lineWriter{log: log, stream: stream}
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			w.write(buf[:n])
		}
		if err != nil {
			w.flush()
			return
		}
	}
}
