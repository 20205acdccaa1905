package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// openTerminal starts o.Cmd (the login shell when empty) on a terminal in
// the sandbox, at this terminal's size, and joins it to this one.
func openTerminal(ctx context.Context, e *env, c *client.Client, id string, o client.TerminalOptions) error {
	o.Size = api.TermSize{Rows: 24, Cols: 80}
	if cols, rows, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
		o.Size = api.TermSize{Rows: uint16(rows), Cols: uint16(cols)}
	}
	t, err := c.OpenTerminal(ctx, id, o)
	if err != nil {
		return err
	}
	return joinTerminal(ctx, e, t, true)
}

// joinTerminal joins this process's stdin and stdout to a remote
// process's terminal until it exits, and returns its exit status. With
// raw, a local terminal goes into raw mode (keys, Ctrl-C among them, go to
// the remote process) and window resizes follow; without it Ctrl-C
// detaches and leaves the process running.
func joinTerminal(ctx context.Context, e *env, t *client.Terminal, raw bool) error {
	defer t.Close()
	in, out := os.Stdin, os.Stdout
	if raw && e.stdinTTY {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return local(fmt.Errorf("put the terminal in raw mode: %w", err))
		}
		defer term.Restore(int(in.Fd()), old)
		go followResizes(ctx, t, int(out.Fd()))
	}
	go sendInput(ctx, e, t)
	for {
		o, err := t.Next(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return fmt.Errorf("the terminal closed before the process exited: %w", err)
		}
		if o.Data != nil {
			if _, err := e.stdout.Write(o.Data); err != nil {
				return local(err)
			}
			continue
		}
		switch m := o.Message; m.Type {
		case api.TerminalDropped:
			fmt.Fprintf(e.stderr, "\r\n[hutch: %d bytes of output were dropped]\r\n", m.Dropped)
		case api.TerminalExit:
			if m.Process != nil && m.Process.ExitCode != nil {
				return exitWith(*m.Process.ExitCode)
			}
			return nil
		}
	}
}

// sendInput copies stdin to the terminal as it comes, and ends the
// terminal's input at its end. Without a stdin it sends nothing.
func sendInput(ctx context.Context, e *env, t *client.Terminal) {
	if e.stdin == nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := e.stdin.Read(buf)
		if n > 0 && t.Input(ctx, buf[:n]) != nil {
			return
		}
		if err != nil {
			_ = t.CloseInput(ctx)
			return
		}
	}
}

// followResizes sends the local terminal's size whenever it changes.
func followResizes(ctx context.Context, t *client.Terminal, fd int) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			if cols, rows, err := term.GetSize(fd); err == nil {
				_ = t.Resize(ctx, api.TermSize{Rows: uint16(rows), Cols: uint16(cols)})
			}
		}
	}
}
