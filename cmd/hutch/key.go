package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/server"
)

// newKeyCmd is `hutch key`: API keys.
func newKeyCmd(e *env) *cobra.Command {
	return newGroup("key", "Manage API keys", "", newKeyCreateCmd(e), newKeyListCmd(e), newKeyRemoveCmd(e), newKeyGenerateCmd(e))
}

// newKeyGenerateCmd is `hutch key generate`: a new key, made here, that
// no server holds until a fleet's first start takes it as its admin key
// ($HUTCH_ADMIN_KEY).
func newKeyGenerateCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Print a new admin key for $HUTCH_ADMIN_KEY (a fleet's first start makes it its admin key; no server is asked)",
		Args:  nArgs(0, 0, "key generate takes no arguments"),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(e.stdout, server.GenerateKey())
			return nil
		},
	}
}

func newKeyCreateCmd(e *env) *cobra.Command {
	var name, role string
	cmd := &cobra.Command{
		Use:   "create [--name N] [--role member|reader|admin]",
		Short: "Create an API key and print it (shown only this once)",
		Args:  nArgs(0, 0, "key create takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			k, err := c.CreateKey(cmd.Context(), api.CreateKeyRequest{Name: name, Role: role})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, k)
			}
			fmt.Fprintln(e.stdout, k.Secret)
			fmt.Fprintf(e.stderr, "hutch: key %s (%s) created; the key above is shown only this once\n", k.ID, k.Role)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a `name` for the key")
	cmd.Flags().StringVar(&role, "role", api.RoleMember,
		"`role`: member (uses and changes the tenant's resources), reader (only reads them) or admin (also makes tenants); at most the role of the key in use")
	return cmd
}

func newKeyListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List API keys",
		Args:    nArgs(0, 0, "key ls takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			keys, err := c.ListKeys(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, keys.Keys, []string{"ID", "PREFIX", "NAME", "ROLE", "CREATED BY", "AGE", "LAST USED"}, func(k api.Key) []string {
				last := "-"
				if k.LastUsedAt != nil {
					last = formatAge(now, *k.LastUsedAt) + " ago"
				}
				return []string{k.ID, k.Prefix, orDash(k.Name), k.Role, orDash(k.CreatedBy), formatAge(now, k.CreatedAt), last}
			})
		},
	}
}

func newKeyRemoveCmd(e *env) *cobra.Command {
	var cascade bool
	cmd := &cobra.Command{
		Use:   "rm [--cascade] ID…",
		Short: "Revoke API keys",
		Args:  nArgs(1, -1, "key rm takes one or more key ids"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			rm := c.DeleteKey
			if cascade {
				rm = c.DeleteKeyCascade
			}
			return removeUntilError(e, args, func(id string) error {
				return rm(cmd.Context(), id)
			})
		},
	}
	cmd.Flags().BoolVar(&cascade, "cascade", false, "also revoke every key each key created, transitively (for a leaked key)")
	return cmd
}
