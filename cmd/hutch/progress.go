package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is how often a copy's progress line is redrawn.
const progressEvery = 200 * time.Millisecond

// meter counts what a copy moves through the local side's readers and
// writers, keeps the first error of that side (a file that cannot be read
// or written) so it is reported as local rather than as the HTTP failure
// it causes, and shows progress on stderr when that is a terminal.
type meter struct {
	bytes atomic.Int64
	files int

	mu       sync.Mutex
	localErr error

	stop chan struct{}
	done sync.WaitGroup
}

// newMeter starts a meter; end it with finish.
func newMeter(e *env) *meter {
	m := &meter{stop: make(chan struct{})}
	if !e.json && isTerminalWriter(e.stderr) {
		m.done.Add(1)
		go m.show(e.stderr)
	}
	return m
}

// show redraws the progress line until finish.
func (m *meter) show(w io.Writer) {
	defer m.done.Done()
	start := time.Now()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			fmt.Fprint(w, "\r\x1b[K")
			return
		case <-tick.C:
			n := m.bytes.Load()
			rate := float64(n) / time.Since(start).Seconds()
			fmt.Fprintf(w, "\r\x1b[K%s  %s/s", formatBytes(n), formatBytes(int64(rate)))
		}
	}
}

// finish stops the progress line and returns the local side's error, if
// any.
func (m *meter) finish() error {
	close(m.stop)
	m.done.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.localErr
}

// fail records err as the local side's, marking it local.
func (m *meter) fail(err error) error {
	err = local(err)
	m.mu.Lock()
	if m.localErr == nil {
		m.localErr = err
	}
	m.mu.Unlock()
	return err
}

// reader counts what is read from a local r, whose errors are local.
func (m *meter) reader(r io.Reader) io.Reader { return &meterReader{m: m, r: r, local: true} }

// through counts what is read from r, a stream the copy makes (a tar of
// local files), whose errors are what they are.
func (m *meter) through(r io.Reader) io.Reader { return &meterReader{m: m, r: r} }

// writer counts what is written to a local w.
func (m *meter) writer(w io.Writer) io.Writer { return &meterWriter{m: m, w: w} }

type meterReader struct {
	m     *meter
	r     io.Reader
	local bool
}

func (r *meterReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.m.bytes.Add(int64(n))
	if r.local && err != nil && !errors.Is(err, io.EOF) {
		err = r.m.fail(err)
	}
	return n, err
}

type meterWriter struct {
	m *meter
	w io.Writer
}

func (w *meterWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.m.bytes.Add(int64(n))
	if err != nil {
		err = w.m.fail(err)
	}
	return n, err
}
