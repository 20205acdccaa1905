package main

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
)

// runTenant is `hutch tenant create NAME`.
func runTenant(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tenant", "hutch tenant create [--json] NAME")
	asJSON := fs.Bool("json", false, "print the tenant and its key as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "create" {
		return usagef(fs, "use: hutch tenant create NAME")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	t, err := c.CreateTenant(ctx, api.CreateTenantRequest{Name: pos[1]})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintf(e.stdout, "%s\n", t.ID)
	if t.Key != nil {
		fmt.Fprintf(e.stdout, "%s\n", t.Key.Secret)
		fmt.Fprintf(e.stderr, "hutch: tenant %q created with the key above, shown only this once\n", t.Name)
	}
	return nil
}
