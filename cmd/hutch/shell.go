package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// runShell is `hutch shell [--cwd DIR] ID [-- CMD…]`: a terminal in the
// sandbox (its user's login shell by default). The local terminal goes
// into raw mode, window resizes follow, and hutch exits with the remote
// status.
func runShell(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "shell", "hutch shell [--cwd DIR] ID [-- CMD…]")
	cwd := fs.String("cwd", "", "working `directory`")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef(fs, "shell needs a sandbox id")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	in, out := os.Stdin, os.Stdout
	size := api.TermSize{Rows: 24, Cols: 80}
	if cols, rows, err := term.GetSize(int(out.Fd())); err == nil {
		size = api.TermSize{Rows: uint16(rows), Cols: uint16(cols)}
	}
	t, err := c.OpenTerminal(ctx, pos[0], client.TerminalOptions{Cmd: pos[1:], Cwd: *cwd, Size: size})
	if err != nil {
		return err
	}
	defer t.Close()
	if e.stdinTTY {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer term.Restore(int(in.Fd()), old)
		go followResizes(ctx, t, int(out.Fd()))
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 && t.Input(ctx, buf[:n]) != nil {
				return
			}
			if err != nil {
				_ = t.CloseInput(ctx)
				return
			}
		}
	}()
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
				return err
			}
			continue
		}
		switch m := o.Message; m.Type {
		case api.TerminalDropped:
			fmt.Fprintf(e.stderr, "\r\n[hutch: %d bytes of output were dropped]\r\n", m.Dropped)
		case api.TerminalExit:
			if m.Process != nil && m.Process.ExitCode != nil {
				return exitCode(*m.Process.ExitCode)
			}
			return nil
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
