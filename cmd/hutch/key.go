package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
)

const keyUsage = "hutch key create|ls|rm …"

// runKey is `hutch key <verb>`.
func runKey(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "usage: %s\n", keyUsage)
		return errUsageShown
	}
	switch args[0] {
	case "create":
		return keyCreate(ctx, e, args[1:])
	case "ls", "list":
		return keyList(ctx, e, args[1:])
	case "rm":
		return keyRemove(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "hutch: unknown key command %q\nusage: %s\n", args[0], keyUsage)
	return errUsageShown
}

func keyCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "key create", "hutch key create [--name N] [--role member|reader|admin] [--json]")
	name := fs.String("name", "", "a `name` for the key")
	role := fs.String("role", api.RoleMember,
		"`role`: member (uses and changes the tenant's resources), reader (only reads them) or admin (also makes tenants); at most the role of the key in use")
	asJSON := fs.Bool("json", false, "print the key as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "key create takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	k, err := c.CreateKey(ctx, api.CreateKeyRequest{Name: *name, Role: *role})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, k)
	}
	fmt.Fprintln(e.stdout, k.Secret)
	fmt.Fprintf(e.stderr, "hutch: key %s (%s) created; the key above is shown only this once\n", k.ID, k.Role)
	return nil
}

func keyList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "key ls", "hutch key ls [--json]")
	asJSON := fs.Bool("json", false, "print the keys as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "key ls takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	keys, err := c.ListKeys(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, keys.Keys)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "ID", "PREFIX", "NAME", "ROLE", "CREATED BY", "AGE", "LAST USED")
	for _, k := range keys.Keys {
		last := "-"
		if k.LastUsedAt != nil {
			last = formatAge(now, *k.LastUsedAt) + " ago"
		}
		row(tw, k.ID, k.Prefix, orDash(k.Name), k.Role, orDash(k.CreatedBy), formatAge(now, k.CreatedAt), last)
	}
	return tw.Flush()
}

func keyRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "key rm", "hutch key rm [--cascade] ID…")
	cascade := fs.Bool("cascade", false, "also revoke every key each key created, transitively (for a leaked key)")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "key rm takes one or more key ids")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	rm := c.DeleteKey
	if *cascade {
		rm = c.DeleteKeyCascade
	}
	for _, id := range pos {
		if err := rm(ctx, id); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, id)
	}
	return nil
}
