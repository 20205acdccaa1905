package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

const secretUsage = "hutch secret set|ls|rm …"

// maxSecretInput bounds what `secret set` reads from stdin; the server's
// own limit (64 KiB by default) is usually smaller and answers 413.
const maxSecretInput = 1 << 20

// runSecret is `hutch secret <verb>`. Values are write-only: set reads one
// from stdin, never from the command line (which other users see in ps),
// and nothing prints one.
func runSecret(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "usage: %s\n", secretUsage)
		return errUsageShown
	}
	switch args[0] {
	case "set":
		return secretSet(ctx, e, args[1:])
	case "ls", "list":
		return secretList(ctx, e, args[1:])
	case "rm":
		return secretRemove(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "hutch: unknown secret command %q\nusage: %s\n", args[0], secretUsage)
	return errUsageShown
}

func secretSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret set", "hutch secret set NAME [--description D] [--raw] < value\n\n"+
		"Creates the secret NAME, or replaces its value, with what stdin holds (text; one\n"+
		"trailing newline is dropped unless --raw). On a terminal it asks without echo.")
	desc := fs.String("description", "", "a `description` of the secret (kept when replacing unless given)")
	raw := fs.Bool("raw", false, "keep stdin exactly, trailing newline included")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "secret set takes one name; the value comes from stdin")
	}
	name := pos[0]
	descSet := false
	fs.Visit(func(f *flag.Flag) { descSet = descSet || f.Name == "description" })

	value, err := readSecretValue(e, name, *raw)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	sec, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: name, Description: *desc, Value: api.SecretValue(value)})
	verb := "created"
	if client.Code(err) == "secret_exists" {
		req := api.ReplaceSecretRequest{Value: api.SecretValue(value)}
		if descSet {
			req.Description = desc
		}
		sec, err = c.ReplaceSecret(ctx, name, req)
		verb = "replaced"
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, sec.Name)
	fmt.Fprintf(e.stderr, "hutch: secret %s %s (%d bytes)\n", sec.Name, verb, sec.ValueBytes)
	return nil
}

// readSecretValue reads a value from stdin: without echo from a terminal,
// else all of it (bounded), dropping one trailing newline unless raw.
func readSecretValue(e *env, name string, raw bool) (string, error) {
	var b []byte
	if f, ok := e.stdin.(*os.File); ok && e.stdinTTY {
		fmt.Fprintf(e.stderr, "value for %s (not echoed): ", name)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the value from the terminal: %w", err)
		}
		b = v
	} else {
		if e.stdin == nil {
			return "", errors.New("no value: pipe it to stdin, e.g. hutch secret set NAME < file")
		}
		v, err := io.ReadAll(io.LimitReader(e.stdin, maxSecretInput+1))
		if err != nil {
			return "", fmt.Errorf("read the value from stdin: %w", err)
		}
		if len(v) > maxSecretInput {
			return "", fmt.Errorf("the value on stdin is over %d bytes", maxSecretInput)
		}
		b = v
		if !raw {
			b = bytes.TrimSuffix(b, []byte("\n"))
			b = bytes.TrimSuffix(b, []byte("\r"))
		}
	}
	if len(b) == 0 {
		return "", errors.New("no value on stdin: pipe it in, e.g. hutch secret set NAME < file")
	}
	if !utf8.Valid(b) {
		return "", errors.New("the value is not text (UTF-8): encode a binary value first, e.g. with base64")
	}
	return string(b), nil
}

func secretList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret ls", "hutch secret ls [--json]")
	asJSON := fs.Bool("json", false, "print the secrets' metadata as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "secret ls takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	list, err := c.ListSecrets(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, list.Secrets)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "NAME", "BYTES", "UPDATED", "DESCRIPTION")
	for _, s := range list.Secrets {
		row(tw, s.Name, strconv.Itoa(s.ValueBytes), formatAge(now, s.UpdatedAt)+" ago", orDash(s.Description))
	}
	return tw.Flush()
}

func secretRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "secret rm", "hutch secret rm NAME…")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "secret rm takes one or more names")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	for _, name := range pos {
		if err := c.DeleteSecret(ctx, name); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, name)
	}
	return nil
}
