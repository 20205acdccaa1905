package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"
)

// capture is what the server's "snapshot taken" log line says of one
// snapshot (a fork's too): how it copied and how long the copy took, from
// the freeze to the record written.
type capture struct {
	method string
	took   time.Duration
	pause  time.Duration
}

// serverLog is the server's log: "snapshot taken" lines are kept for the
// tables, and with verbose everything at info and above also goes to
// stderr.
type serverLog struct {
	mu       sync.Mutex
	captures []capture
	out      slog.Handler // nil: nothing printed
}

func newServerLog(verbose bool) *serverLog {
	l := &serverLog{}
	if verbose {
		l.out = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	return l
}

// logger is a logger for one server.
func (l *serverLog) logger() *slog.Logger { return slog.New(&logHandler{log: l}) }

// take returns the captures logged since the last take.
func (l *serverLog) take() []capture {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.captures
	l.captures = nil
	return c
}

// logHandler is a slog.Handler feeding a serverLog.
type logHandler struct {
	log *serverLog
	out slog.Handler // log.out with this handler's attributes and groups; nil: log.out
}

func (h *logHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "snapshot taken" {
		var c capture
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "method":
				c.method = a.Value.String()
			case "took":
				c.took = a.Value.Duration()
			case "pause":
				c.pause = a.Value.Duration()
			}
			return true
		})
		h.log.mu.Lock()
		h.log.captures = append(h.log.captures, c)
		h.log.mu.Unlock()
	}
	if out := h.handler(); out != nil {
		return out.Handle(ctx, r)
	}
	return nil
}

func (h *logHandler) handler() slog.Handler {
	if h.out != nil {
		return h.out
	}
	return h.log.out
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &logHandler{log: h.log}
	if out := h.handler(); out != nil {
		n.out = out.WithAttrs(attrs)
	}
	return n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	n := &logHandler{log: h.log}
	if out := h.handler(); out != nil {
		n.out = out.WithGroup(name)
	}
	return n
}
