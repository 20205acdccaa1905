package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
)

// newAppConfigCmd is `hutch app config`: `config APP` (or `config ls
// APP`) lists, `config set` and `config rm` change. An app named set, rm
// or ls is listed with `config ls NAME`.
func newAppConfigCmd(e *env) *cobra.Command {
	cmd := newAppConfigListCmd(e, "config APP", "List an app's config (set, rm: change it)")
	cmd.AddCommand(newAppConfigListCmd(e, "ls APP", "List an app's config"), newAppConfigSetCmd(e), newAppConfigRemoveCmd(e))
	return cmd
}

func newAppConfigListCmd(e *env, use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: "Lists the app's config; sensitive values are never shown.\n" +
			"Change it with hutch app config set|rm.",
		Args: oneApp("config"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			list, err := c.Config(cmd.Context(), id)
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Config, []string{"KEY", "ACCESS", "UPDATED", "VALUE"}, func(c api.ConfigEntry) []string {
				v := c.Value
				if c.Sensitive {
					v = "(sensitive)"
				}
				return []string{c.Key, c.Access, formatAge(now, c.UpdatedAt) + " ago", oneLine(v)}
			})
		},
	}
}

const appConfigSetLong = `Sets KEY to VALUE, creating it or changing it (what a flag does not say is kept).
With KEY alone the value comes from stdin (one trailing newline dropped), so it
stays off the command line; on a terminal it is asked for without echo.

access says where the value goes: control_plane_only (the default: nowhere in a
sandbox), runtime (the app's processes' environment), agent (the environment of
task commands) or both. A sensitive value is never shown again and stays sensitive.`

func newAppConfigSetCmd(e *env) *cobra.Command {
	var (
		sensitive bool
		access    string
	)
	cmd := &cobra.Command{
		Use:   "set [--sensitive] [--access A] APP KEY=VALUE | KEY",
		Short: "Set a config value; KEY alone reads it from stdin",
		Long:  appConfigSetLong,
		Args:  nArgs(2, 2, "app config set takes an app and one KEY=VALUE (or KEY, the value on stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, value, ok, err := parseConfigPair(args[1])
			if err != nil {
				return usagef("%s", err)
			}
			if !ok {
				if value, err = readConfigValue(e, key); err != nil {
					return err
				}
			}
			req := api.SetConfigRequest{Key: key, Value: &value, Access: access}
			if cmd.Flags().Changed("sensitive") {
				req.Sensitive = &sensitive
			}
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			entry, err := c.SetConfig(cmd.Context(), id, req)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, entry)
			}
			fmt.Fprintln(e.stdout, entry.Key)
			how := "access " + entry.Access
			if entry.Sensitive {
				how += ", sensitive"
			}
			fmt.Fprintf(e.stderr, "hutch: config %s set (%s)\n", entry.Key, how)
			return nil
		},
	}
	cmd.Flags().BoolVar(&sensitive, "sensitive", false, "never show the value again")
	cmd.Flags().StringVar(&access, "access", "", "where the value goes, `A`: runtime, agent, both or control_plane_only (a new key's default)")
	return cmd
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

func newAppConfigRemoveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm APP KEY…",
		Short: "Delete config keys",
		Args:  nArgs(2, -1, "app config rm takes an app and one or more keys"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			return removeEach(e, "app config rm", args[1:], func(key string) error {
				return c.DeleteConfig(cmd.Context(), id, key)
			})
		},
	}
}
