package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
)

// appConfig is `hutch app config`: `config APP` (or `config ls APP`)
// lists, `config set` and `config rm` change. An app named set, rm or ls
// is listed with `config ls NAME`.
func appConfig(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "set":
			return appConfigSet(ctx, e, args[1:])
		case "rm":
			return appConfigRemove(ctx, e, args[1:])
		case "ls", "list":
			args = args[1:]
		}
	}
	return appConfigList(ctx, e, args)
}

func appConfigList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app config", "hutch app config [ls] [--json] APP\n\n"+
		"Lists the app's config; sensitive values are never shown.\n"+
		"Change it with hutch app config set|rm.")
	asJSON := fs.Bool("json", false, "print the config as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	list, err := c.Config(ctx, id)
	if err != nil {
		return err
	}
	now := time.Now()
	return printList(e.stdout, *asJSON, list.Config, []string{"KEY", "ACCESS", "UPDATED", "VALUE"}, func(c api.ConfigEntry) []string {
		v := c.Value
		if c.Sensitive {
			v = "(sensitive)"
		}
		return []string{c.Key, c.Access, formatAge(now, c.UpdatedAt) + " ago", oneLine(v)}
	})
}

func appConfigSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app config set", "hutch app config set [--sensitive] [--access A] [--json] APP KEY=VALUE | KEY\n\n"+
		"Sets KEY to VALUE, creating it or changing it (what a flag does not say is kept).\n"+
		"With KEY alone the value comes from stdin (one trailing newline dropped), so it\n"+
		"stays off the command line; on a terminal it is asked for without echo.\n\n"+
		"access says where the value goes: control_plane_only (the default: nowhere in a\n"+
		"sandbox), runtime (the app's processes' environment), agent (the environment of\n"+
		"task commands) or both. A sensitive value is never shown again and stays sensitive.")
	sensitive := fs.Bool("sensitive", false, "never show the value again")
	access := fs.String("access", "", "where the value goes, `A`: runtime, agent, both or control_plane_only (a new key's default)")
	asJSON := fs.Bool("json", false, "print the entry as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "app config set takes an app and one KEY=VALUE (or KEY, the value on stdin)")
	}
	key, value, ok, err := parseConfigPair(pos[1])
	if err != nil {
		return usagef(fs, "%s", err)
	}
	if !ok {
		if value, err = readConfigValue(e, key); err != nil {
			return err
		}
	}
	req := api.SetConfigRequest{Key: key, Value: &value, Access: *access}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "sensitive" {
			req.Sensitive = sensitive
		}
	})
	c, id, err := appClient(ctx, e, pos[0])
	if err != nil {
		return err
	}
	entry, err := c.SetConfig(ctx, id, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, entry)
	}
	fmt.Fprintln(e.stdout, entry.Key)
	how := "access " + entry.Access
	if entry.Sensitive {
		how += ", sensitive"
	}
	fmt.Fprintf(e.stderr, "hutch: config %s set (%s)\n", entry.Key, how)
	return nil
}

// parseConfigPair splits KEY=VALUE at the first '='; ok is false for a
// KEY alone (whose value comes from stdin).
func parseConfigPair(s string) (key, value string, ok bool, err error) {
	key, value, ok = strings.Cut(s, "=")
	if key == "" {
		return "", "", false, fmt.Errorf("%q has an empty key", s)
	}
	return key, value, ok, nil
}

// readConfigValue reads a config value from stdin: without echo from a
// terminal, else all of it (bounded), less one trailing newline.
func readConfigValue(e *env, key string) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && e.stdinTTY {
		fmt.Fprintf(e.stderr, "value for %s (not echoed): ", key)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the value from the terminal: %w", err)
		}
		return string(b), nil
	}
	if e.stdin == nil || e.stdinTTY {
		return "", errors.New("no value: give KEY=VALUE, or pipe the value to stdin")
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, api.MaxConfigValue+2))
	if err != nil {
		return "", fmt.Errorf("read the value from stdin: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) > api.MaxConfigValue {
		return "", fmt.Errorf("the value on stdin is over %d bytes", api.MaxConfigValue)
	}
	return string(b), nil
}

func appConfigRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app config rm", "hutch app config rm APP KEY…")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(fs, "app config rm takes an app and one or more keys")
	}
	c, id, err := appClient(ctx, e, pos[0])
	if err != nil {
		return err
	}
	return eachKey(e, pos[1:], func(key string) error { return c.DeleteConfig(ctx, id, key) })
}

// eachKey applies fn to every key, printing those it did and reporting
// each failure; it fails when any did.
func eachKey(e *env, keys []string, fn func(string) error) error {
	var failed []string
	for _, k := range keys {
		if err := fn(k); err != nil {
			fmt.Fprintf(e.stderr, "hutch: %s: %s\n", k, err)
			failed = append(failed, k)
			continue
		}
		fmt.Fprintln(e.stdout, k)
	}
	if len(failed) > 0 {
		return fmt.Errorf("app config rm failed for %s", strings.Join(failed, ", "))
	}
	return nil
}
