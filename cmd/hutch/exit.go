package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Error codes of the CLI's own errors under --json; an answer of the
// server keeps the API's code.
const (
	codeUsage       = "usage"       // a command line the command cannot use
	codeLocal       = "local"       // this machine's side: a file, stdin
	codeUnreachable = "unreachable" // no server at HUTCH_URL
	codeInterrupted = "interrupted" // Ctrl-C
	codeError       = "error"       // anything else
)

// usageError is a command line the command cannot use; it exits 2.
type usageError struct {
	msg string
}

func (u *usageError) Error() string { return u.msg }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// localError is a failure on this machine's side of a command (a file
// that cannot be read or written), told apart from the server's.
type localError struct {
	err error
}

func (l *localError) Error() string { return "local: " + l.err.Error() }
func (l *localError) Unwrap() error { return l.err }

// local marks err, when not nil, as this machine's.
func local(err error) error {
	if err == nil {
		return nil
	}
	return &localError{err: err}
}

// localReader marks the errors of reading a local file as local.
type localReader struct {
	r io.Reader
}

func (l localReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = local(err)
	}
	return n, err
}

// localWriter marks the errors of writing a local file (or stdout) as
// local.
type localWriter struct {
	w io.Writer
}

func (l localWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	return n, local(err)
}

// exitCode is the exit status a command asks for once it has said all it
// has to say (exec passing on the remote code).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// exitWith is nil for status 0, else the exitCode.
func exitWith(status int) error {
	if status == 0 {
		return nil
	}
	return exitCode(status)
}

// exitStatus reports err on stderr the CLI's one way, once, and returns
// the exit status for it: 0 for nil, 2 for usage errors, the remote code
// for an exec, 130 after Ctrl-C, 1 for the rest. cmd is the command that
// ran (or failed to parse), for the usage hint.
func exitStatus(ctx context.Context, e *env, cmd *cobra.Command, err error) int {
	var (
		exit  exitCode
		usage *usageError
		apiE  *client.Error
		hutE  *errdefs.Error
		loc   *localError
		urlE  *url.Error
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		return int(exit)
	case errors.As(err, &usage):
		report(e, codeUsage, usage.msg)
		if !e.json && cmd != nil {
			fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return 2
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		report(e, codeInterrupted, "interrupted")
		return 130
	case errors.As(err, &loc):
		report(e, codeLocal, err.Error())
		return 1
	case errors.As(err, &apiE):
		msg := err.Error()
		if err == error(apiE) && e.json {
			msg = apiE.Message
		}
		code := apiE.Code
		if code == "" {
			code = fmt.Sprintf("http_%d", apiE.StatusCode)
		}
		report(e, code, msg)
		if !e.json && (apiE.Code == "missing_api_key" || apiE.Code == "invalid_api_key") {
			fmt.Fprintf(e.stderr, "hutch: the key came from %s; set HUTCH_API_KEY to the right one\n", e.cfg.keySourceText())
		}
		return 1
	case errors.As(err, &hutE):
		// A failure of a command that runs here, not through the API
		// (hutch store): its code as the API would give it.
		report(e, hutE.Code, err.Error())
		return 1
	case errors.As(err, &urlE) && errors.Is(err, syscall.ECONNREFUSED):
		report(e, codeUnreachable, fmt.Sprintf("cannot reach the server at %s: connection refused (is hutch serve running? set HUTCH_URL)", e.cfg.URL))
		return 1
	}
	report(e, codeError, err.Error())
	return 1
}

// report prints an error: "hutch: message" on stderr, or under --json the
// API's error envelope, {"error":{"code":…,"message":…}}, on stderr. A
// message that already starts with "hutch: " (the agent's own) keeps one.
func report(e *env, code, msg string) {
	msg = strings.TrimPrefix(msg, "hutch: ")
	if e.json {
		b, _ := json.Marshal(api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
		fmt.Fprintf(e.stderr, "%s\n", b)
		return
	}
	fmt.Fprintf(e.stderr, "hutch: %s\n", msg)
}
