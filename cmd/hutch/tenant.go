package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newTenantCmd is `hutch tenant`.
func newTenantCmd(e *env) *cobra.Command {
	quota := newGroup("quota", "Show or set a tenant's quotas", "", newQuotaGetCmd(e), newQuotaSetCmd(e))
	quota.Aliases = []string{"quotas"}
	return newGroup("tenant", "Create, suspend, resume and delete tenants; show and set their quotas (admin)", "",
		newTenantCreateCmd(e), newTenantSuspendCmd(e), newTenantResumeCmd(e), newTenantDeleteCmd(e), quota)
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

// newTenantSuspendCmd is `hutch tenant suspend ID`.
func newTenantSuspendCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "suspend ID",
		Short: "Suspend a tenant: stop its sandboxes, let its keys only read (admin)",
		Long: "Suspends the tenant ID: its keys may still read, anything else is refused (403\n" +
			"tenant_suspended) and nothing of it starts; every sandbox of it is stopped, its files\n" +
			"kept. Its data stay. hutch tenant resume undoes it.",
		Args: nArgs(1, 1, "use: hutch tenant suspend ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.SuspendTenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printTenant(e, t, "suspended; its sandboxes are stopped")
		},
	}
}

// newTenantResumeCmd is `hutch tenant resume ID`.
func newTenantResumeCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a suspended tenant; its sandboxes stay stopped (admin)",
		Args:  nArgs(1, 1, "use: hutch tenant resume ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.ResumeTenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printTenant(e, t, "resumed; its sandboxes stay stopped until it starts them")
		},
	}
}

// newTenantDeleteCmd is `hutch tenant delete ID [--no-wait]`: it follows
// the deletion on stderr, a line per step, until it is done.
func newTenantDeleteCmd(e *env) *cobra.Command {
	var noWait bool
	cmd := &cobra.Command{
		Use:   "delete ID [--no-wait]",
		Short: "Delete a tenant with everything it owns; its record stays (admin)",
		Long: "Deletes the tenant ID: its keys are revoked, then its apps, sandboxes, snapshots,\n" +
			"templates, volumes, secrets and events are removed, and a record of the deletion stays\n" +
			"(hutch prints each step as the server reaches it). It cannot be undone. A deletion that\n" +
			"stopped short, or was cut short by a restart, goes on when run again; a deleted tenant's\n" +
			"record is printed as it is.",
		Args: nArgs(1, 1, "use: hutch tenant delete ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			t, err := c.DeleteTenant(ctx, args[0])
			if err != nil {
				return err
			}
			if !noWait && t.State == api.TenantDeleting {
				progress := deleteProgress(e, t)
				if t, err = c.WaitTenantDeleted(ctx, args[0], progress); err != nil {
					return fmt.Errorf("%w; run hutch tenant delete %s again to go on", err, args[0])
				}
			}
			if t.State == api.TenantDeleted {
				return printTenant(e, t, "deleted: "+removedText(t.Deletion.Removed))
			}
			return printTenant(e, t, "is being deleted; hutch tenant delete "+t.ID+" again shows how far it got")
		},
	}
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the deletion has begun")
	return cmd
}

// deleteProgress returns what prints, on stderr, each step of a deletion
// as it begins (nothing with --json).
func deleteProgress(e *env, t *api.Tenant) func(*api.Tenant) {
	if e.json {
		return nil
	}
	fmt.Fprintf(e.stderr, "hutch: deleting tenant %q (%s)\n", t.Name, t.ID)
	last := ""
	return func(t *api.Tenant) {
		d := t.Deletion
		if d == nil || d.Step == last || d.Step == api.DeleteStepDone {
			return
		}
		last = d.Step
		fmt.Fprintf(e.stderr, "hutch:   %s…  (removed so far: %s)\n", d.Step, removedText(d.Removed))
	}
}

// removedText says what a deletion removed: "2 sandboxes, 1 key", or
// "nothing".
func removedText(r api.TenantRemoved) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Keys, "key"}, {r.Apps, "app"}, {r.Sandboxes, "sandbox"}, {r.Snapshots, "snapshot"}, {r.Templates, "template"},
		{r.Volumes, "volume"}, {r.Secrets, "secret"}, {r.Events, "event"}} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 "+c.what)
		case c.n > 1 && c.what == "sandbox":
			parts = append(parts, fmt.Sprintf("%d sandboxes", c.n))
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// printTenant prints a tenant's id on stdout and what became of it on
// stderr, or the tenant as JSON.
func printTenant(e *env, t *api.Tenant, what string) error {
	if e.json {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ID)
	fmt.Fprintf(e.stderr, "hutch: tenant %q %s\n", t.Name, what)
	return nil
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
