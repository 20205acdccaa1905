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
			for _, r := range quotaRows {
				set = set || cmd.Flags().Changed(r.flag())
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
			for _, r := range quotaRows {
				if r.count == nil {
					flags[r.flag()].applyFloat(&q.CPU)
					continue
				}
				flags[r.flag()].apply(r.count(&q))
			}
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
	for _, r := range quotaRows {
		f := &quotaFlag{float: r.count == nil}
		flags[r.flag()] = f
		cmd.Flags().Var(f, r.flag(), r.help)
	}
	return cmd
}

// quotaRow is one quota as the CLI sets and shows it.
type quotaRow struct {
	name string // its field in the API, and its flag with '-' for '_'
	help string
	// count is where a whole-number quota is set; nil for cpu, the one
	// that is not.
	count func(*api.Quotas) **int
	limit func(api.QuotaLimits) float64
	used  func(api.QuotaUsage) float64
}

func (r quotaRow) flag() string { return strings.ReplaceAll(r.name, "_", "-") }

// quotaRows are the quotas, in the order they are shown.
var quotaRows = []quotaRow{
	{"sandboxes", "`N` sandboxes neither destroyed nor failed (stopped ones count)",
		func(q *api.Quotas) **int { return &q.Sandboxes }, func(l api.QuotaLimits) float64 { return float64(l.Sandboxes) }, func(u api.QuotaUsage) float64 { return float64(u.Sandboxes) }},
	{"memory_mb", "`MiB` of memory limits of the tenant's sandboxes that are not stopped",
		func(q *api.Quotas) **int { return &q.MemoryMB }, func(l api.QuotaLimits) float64 { return float64(l.MemoryMB) }, func(u api.QuotaUsage) float64 { return float64(u.MemoryMB) }},
	{"cpu", "`cores` of CPU limits of the tenant's sandboxes that are not stopped",
		nil, func(l api.QuotaLimits) float64 { return l.CPU }, func(u api.QuotaUsage) float64 { return u.CPU }},
	{"pids", "`N` pids limits of the tenant's sandboxes that are not stopped",
		func(q *api.Quotas) **int { return &q.Pids }, func(l api.QuotaLimits) float64 { return float64(l.Pids) }, func(u api.QuotaUsage) float64 { return float64(u.Pids) }},
	{"disk_mb", "`MiB` of disk: the tenant's sandboxes' files, snapshots, volumes and templates",
		func(q *api.Quotas) **int { return &q.DiskMB }, func(l api.QuotaLimits) float64 { return float64(l.DiskMB) }, func(u api.QuotaUsage) float64 { return float64(u.DiskMB) }},
	{"snapshots", "`N` snapshots",
		func(q *api.Quotas) **int { return &q.Snapshots }, func(l api.QuotaLimits) float64 { return float64(l.Snapshots) }, func(u api.QuotaUsage) float64 { return float64(u.Snapshots) }},
	{"snapshots_mb", "`MiB` of snapshots",
		func(q *api.Quotas) **int { return &q.SnapshotsMB }, func(l api.QuotaLimits) float64 { return float64(l.SnapshotsMB) }, func(u api.QuotaUsage) float64 { return float64(u.SnapshotsMB) }},
	{"volumes", "`N` volumes",
		func(q *api.Quotas) **int { return &q.Volumes }, func(l api.QuotaLimits) float64 { return float64(l.Volumes) }, func(u api.QuotaUsage) float64 { return float64(u.Volumes) }},
	{"volumes_mb", "`MiB` of volumes' sizes",
		func(q *api.Quotas) **int { return &q.VolumesMB }, func(l api.QuotaLimits) float64 { return float64(l.VolumesMB) }, func(u api.QuotaUsage) float64 { return float64(u.VolumesMB) }},
	{"templates", "`N` templates",
		func(q *api.Quotas) **int { return &q.Templates }, func(l api.QuotaLimits) float64 { return float64(l.Templates) }, func(u api.QuotaUsage) float64 { return float64(u.Templates) }},
	{"templates_mb", "`MiB` of templates' unpacked layers",
		func(q *api.Quotas) **int { return &q.TemplatesMB }, func(l api.QuotaLimits) float64 { return float64(l.TemplatesMB) }, func(u api.QuotaUsage) float64 { return float64(u.TemplatesMB) }},
	{"apps", "`N` apps",
		func(q *api.Quotas) **int { return &q.Apps }, func(l api.QuotaLimits) float64 { return float64(l.Apps) }, func(u api.QuotaUsage) float64 { return float64(u.Apps) }},
	{"keys", "`N` API keys",
		func(q *api.Quotas) **int { return &q.Keys }, func(l api.QuotaLimits) float64 { return float64(l.Keys) }, func(u api.QuotaUsage) float64 { return float64(u.Keys) }},
	{"secrets", "`N` secrets",
		func(q *api.Quotas) **int { return &q.Secrets }, func(l api.QuotaLimits) float64 { return float64(l.Secrets) }, func(u api.QuotaUsage) float64 { return float64(u.Secrets) }},
	{"watches", "`N` file watches open at once on a server",
		func(q *api.Quotas) **int { return &q.Watches }, func(l api.QuotaLimits) float64 { return float64(l.Watches) }, func(u api.QuotaUsage) float64 { return float64(u.Watches) }},
	{"streams", "`N` streams (events, output, logs, terminal input) open at once on a server",
		func(q *api.Quotas) **int { return &q.Streams }, func(l api.QuotaLimits) float64 { return float64(l.Streams) }, func(u api.QuotaUsage) float64 { return float64(u.Streams) }},
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
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range quotaRows {
		limit, from := "none", "default"
		if l := r.limit(q.Limits); l != 0 {
			limit = num(l)
		}
		if (r.count == nil && q.Set.CPU != nil) || (r.count != nil && *r.count(&q.Set) != nil) {
			from = "set"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.name, limit, from, num(r.used(q.Usage)))
	}
	w.Flush()
}
