package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newTenantCmd is `hutch tenant`.
func newTenantCmd(e *env) *cobra.Command {
	quota := newGroup("quota", "Show or set a tenant's quotas", "", newQuotaGetCmd(e), newQuotaSetCmd(e))
	quota.Aliases = []string{"quotas"}
	return newGroup("tenant", "Create tenants; show and set their quotas (admin)", "", newTenantCreateCmd(e), quota)
}

// newTenantCreateCmd is `hutch tenant create NAME`.
func newTenantCreateCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create a tenant and print its id and first key",
		Args:  nArgs(1, 1, "use: hutch tenant create NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.CreateTenant(cmd.Context(), api.CreateTenantRequest{Name: args[0]})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, t)
			}
			fmt.Fprintf(e.stdout, "%s\n", t.ID)
			if t.Key != nil {
				fmt.Fprintf(e.stdout, "%s\n", t.Key.Secret)
				fmt.Fprintf(e.stderr, "hutch: tenant %q created with the key above, shown only this once\n", t.Name)
			}
			return nil
		},
	}
}

// newQuotaGetCmd is `hutch tenant quota get [TENANT]`: the key's own
// tenant's quotas when TENANT is left out.
func newQuotaGetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get [TENANT]",
		Short: "Show a tenant's quotas and usage",
		Args:  nArgs(0, 1, "use: hutch tenant quota get [TENANT]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var id string
			if len(args) == 1 {
				id = args[0]
			} else {
				keys, err := c.ListKeys(ctx)
				if err != nil {
					return err
				}
				if len(keys.Keys) == 0 {
					return errors.New("the key's tenant is unknown; name it: hutch tenant quota get TENANT")
				}
				id = keys.Keys[0].TenantID
			}
			q, err := c.TenantQuotas(ctx, id)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, q)
			}
			printQuotas(e, q)
			return nil
		},
	}
}

// quotaNames are the quotas quota set takes, as flags.
var quotaNames = []string{"sandboxes", "memory-mb", "cpu", "pids", "disk-mb"}

// newQuotaSetCmd is `hutch tenant quota set TENANT --memory-mb 4096 …`:
// the quotas named change, the others stay as they are.
func newQuotaSetCmd(e *env) *cobra.Command {
	flags := map[string]*quotaFlag{}
	cmd := &cobra.Command{
		Use:   "set [flags] TENANT",
		Short: "Set a tenant's quotas (admin; a number, 0 for no limit, or default)",
		Args:  nArgs(1, 1, "use: hutch tenant quota set [flags] TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := false
			for _, name := range quotaNames {
				set = set || cmd.Flags().Changed(name)
			}
			if !set {
				return usagef("name at least one quota to set, e.g. --memory-mb 8192")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cur, err := c.TenantQuotas(ctx, args[0])
			if err != nil {
				return err
			}
			q := cur.Set
			flags["sandboxes"].apply(&q.Sandboxes)
			flags["memory-mb"].apply(&q.MemoryMB)
			flags["cpu"].applyFloat(&q.CPU)
			flags["pids"].apply(&q.Pids)
			flags["disk-mb"].apply(&q.DiskMB)
			out, err := c.SetTenantQuotas(ctx, args[0], q)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, out)
			}
			printQuotas(e, out)
			return nil
		},
	}
	for _, name := range quotaNames {
		f := &quotaFlag{float: name == "cpu"}
		flags[name] = f
		cmd.Flags().Var(f, name, quotaHelp[name])
	}
	return cmd
}

var quotaHelp = map[string]string{
	"sandboxes": "`N` sandboxes neither destroyed nor failed (stopped ones count)",
	"memory-mb": "`MiB` of memory limits of the tenant's sandboxes that are not stopped",
	"cpu":       "`cores` of CPU limits of the tenant's sandboxes that are not stopped",
	"pids":      "`N` pids limits of the tenant's sandboxes that are not stopped",
	"disk-mb":   "`MiB` of disk (recorded, not enforced yet)",
}

// quotaFlag is one quota on the command line: a number, or "default".
type quotaFlag struct {
	float  bool
	given  bool
	def    bool
	number float64
}

func (f *quotaFlag) String() string {
	switch {
	case !f.given:
		return ""
	case f.def:
		return "default"
	}
	return strconv.FormatFloat(f.number, 'f', -1, 64)
}

func (f *quotaFlag) Type() string { return "quota" }

func (f *quotaFlag) Set(v string) error {
	f.given = true
	if v == "default" {
		f.def = true
		return nil
	}
	var err error
	if f.float {
		f.number, err = strconv.ParseFloat(v, 64)
	} else {
		var n int
		n, err = strconv.Atoi(v)
		f.number = float64(n)
	}
	if err != nil || f.number < 0 {
		return fmt.Errorf("%q: want a number of 0 or more (0: no limit), or default", v)
	}
	return nil
}

func (f *quotaFlag) apply(p **int) {
	switch {
	case !f.given:
	case f.def:
		*p = nil
	default:
		n := int(f.number)
		*p = &n
	}
}

func (f *quotaFlag) applyFloat(p **float64) {
	switch {
	case !f.given:
	case f.def:
		*p = nil
	default:
		n := f.number
		*p = &n
	}
}

// printQuotas prints a tenant's quotas as a table: each quota, the limit
// in force (none for 0), whether it is set or the server's default, and
// the usage.
func printQuotas(e *env, q *api.TenantQuotas) {
	fmt.Fprintf(e.stdout, "tenant %s\n", q.TenantID)
	w := newTable(e.stdout)
	fmt.Fprintln(w, "QUOTA\tLIMIT\tFROM\tUSED")
	from := func(set bool) string {
		if set {
			return "set"
		}
		return "default"
	}
	limit := func(v float64) string {
		if v == 0 {
			return "none"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	used := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	l, u, s := q.Limits, q.Usage, q.Set
	fmt.Fprintf(w, "sandboxes\t%s\t%s\t%s\n", limit(float64(l.Sandboxes)), from(s.Sandboxes != nil), used(float64(u.Sandboxes)))
	fmt.Fprintf(w, "memory_mb\t%s\t%s\t%s\n", limit(float64(l.MemoryMB)), from(s.MemoryMB != nil), used(float64(u.MemoryMB)))
	fmt.Fprintf(w, "cpu\t%s\t%s\t%s\n", limit(l.CPU), from(s.CPU != nil), used(u.CPU))
	fmt.Fprintf(w, "pids\t%s\t%s\t%s\n", limit(float64(l.Pids)), from(s.Pids != nil), used(float64(u.Pids)))
	disk := "not enforced"
	if q.DiskEnforced {
		disk = "-"
	}
	fmt.Fprintf(w, "disk_mb\t%s\t%s\t%s\n", limit(float64(l.DiskMB)), from(s.DiskMB != nil), disk)
	w.Flush()
}
