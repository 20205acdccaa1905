package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// maxSecretInput bounds what `secret set` reads from stdin; the server's
// own limit (64 KiB by default) is usually smaller and answers 413.
const maxSecretInput = 1 << 20

// newSecretCmd is `hutch secret`. Values are write-only: set reads one
// from stdin, never from the command line (which other users see in ps),
// and nothing prints one.
func newSecretCmd(e *env) *cobra.Command {
	return newGroup("secret", "Manage secrets; set reads the value from stdin", "",
		newSecretSetCmd(e), newSecretListCmd(e), newSecretRemoveCmd(e))
}

func newSecretSetCmd(e *env) *cobra.Command {
	var (
		desc     string
		registry string
		raw      bool
	)
	cmd := &cobra.Command{
		Use:   "set NAME [--description D] [--registry HOST] [--raw] < value",
		Short: "Create or replace a secret with the value on stdin",
		Long: "Creates the secret NAME, or replaces its value, with what stdin holds (text; one\n" +
			"trailing newline is dropped unless --raw). On a terminal it asks without echo.\n\n" +
			"With --registry HOST the secret is a registry password bound to HOST (ghcr.io,\n" +
			"docker.io, registry.example.com:5000): the only kind `template pull --password-secret`\n" +
			"takes, sent to that host alone and to nothing else. A secret's kind and host are\n" +
			"set when it is created; to change them, remove it and set it again.",
		Args: nArgs(1, 1, "secret set takes one name; the value comes from stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			value, err := readSecretValue(e, name, raw)
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			create := api.CreateSecretRequest{Name: name, Description: desc, Value: api.SecretValue(value)}
			if registry != "" {
				create.Kind, create.Registry = api.SecretKindRegistry, registry
			}
			sec, err := c.CreateSecret(ctx, create)
			verb := "created"
			if client.Code(err) == "secret_exists" {
				if err := sameKind(cmd, c, name, registry); err != nil {
					return err
				}
				req := api.ReplaceSecretRequest{Value: api.SecretValue(value)}
				if cmd.Flags().Changed("description") {
					req.Description = &desc
				}
				sec, err = c.ReplaceSecret(ctx, name, req)
				verb = "replaced"
			}
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, sec)
			}
			fmt.Fprintln(e.stdout, sec.Name)
			bound := ""
			if sec.Kind == api.SecretKindRegistry {
				bound = ", a registry password for " + sec.Registry
			}
			fmt.Fprintf(e.stderr, "hutch: secret %s %s (%d bytes%s)\n", sec.Name, verb, sec.ValueBytes, bound)
			return nil
		},
	}
	cmd.Flags().StringVar(&desc, "description", "", "a `description` of the secret (kept when replacing unless given)")
	cmd.Flags().StringVar(&registry, "registry", "", "make it a registry password bound to `HOST` (host or host:port)")
	cmd.Flags().BoolVar(&raw, "raw", false, "keep stdin exactly, trailing newline included")
	return cmd
}

// sameKind refuses to replace the existing secret name's value with
// --registry HOST unless it is a registry secret bound to HOST: a kind and
// a host never change, so the value would otherwise go where the command
// did not say. Without --registry the value is replaced whatever the kind;
// a registry secret's stays bound to its host, which the answer shows.
func sameKind(cmd *cobra.Command, c *client.Client, name, registry string) error {
	if registry == "" {
		return nil
	}
	sec, err := c.GetSecret(cmd.Context(), name)
	if err != nil {
		return err
	}
	switch {
	case sec.Kind != api.SecretKindRegistry:
		return fmt.Errorf("secret %s exists and is not a registry secret; a kind cannot change: remove it (hutch secret rm %s) and set it again", name, name)
	case registryName(sec.Registry) != registryName(registry):
		return fmt.Errorf("secret %s is a registry password for %s, not %s; a host cannot change: remove it (hutch secret rm %s) and set it again", name, sec.Registry, registry, name)
	}
	return nil
}

// registryName is host as the server keeps a registry secret's host, for
// comparing: lower case, without :443, docker.io as index.docker.io.
func registryName(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ":443")
	if h == "docker.io" {
		return "index.docker.io"
	}
	return h
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

func newSecretListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List secrets (names and metadata, never values)",
		Args:    nArgs(0, 0, "secret ls takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ListSecrets(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Secrets, []string{"NAME", "KIND", "REGISTRY", "BYTES", "UPDATED", "DESCRIPTION"}, func(s api.Secret) []string {
				return []string{s.Name, s.Kind, orDash(s.Registry), strconv.Itoa(s.ValueBytes), formatAge(now, s.UpdatedAt) + " ago", orDash(s.Description)}
			})
		},
	}
}

func newSecretRemoveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME…",
		Short: "Delete secrets",
		Args:  nArgs(1, -1, "secret rm takes one or more names"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			return removeUntilError(e, args, func(name string) error {
				return c.DeleteSecret(cmd.Context(), name)
			})
		},
	}
}
