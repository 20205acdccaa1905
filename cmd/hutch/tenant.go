package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/hutchdev/hutch/api"
)

const tenantUsage = "hutch tenant create NAME | hutch tenant quota get|set …"

// runTenant is `hutch tenant <verb>`.
func runTenant(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "usage: %s\n", tenantUsage)
		return errUsageShown
	}
	switch args[0] {
	case "create":
		return tenantCreate(ctx, e, args[1:])
	case "quota", "quotas":
		if len(args) > 1 && args[1] == "get" {
			return quotaGet(ctx, e, args[2:])
		}
		if len(args) > 1 && args[1] == "set" {
			return quotaSet(ctx, e, args[2:])
		}
		fmt.Fprintf(e.stderr, "usage: hutch tenant quota get [TENANT] | hutch tenant quota set TENANT [flags]\n")
		return errUsageShown
	}
	fmt.Fprintf(e.stderr, "hutch: unknown tenant command %q\nusage: %s\n", args[0], tenantUsage)
	return errUsageShown
}

// tenantCreate is `hutch tenant create NAME`.
func tenantCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tenant create", "hutch tenant create [--json] NAME")
	asJSON := fs.Bool("json", false, "print the tenant and its key as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "use: hutch tenant create NAME")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	t, err := c.CreateTenant(ctx, api.CreateTenantRequest{Name: pos[0]})
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

// quotaGet is `hutch tenant quota get [TENANT]`: the key's own tenant's
// quotas when TENANT is left out.
func quotaGet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tenant quota get", "hutch tenant quota get [--json] [TENANT]")
	asJSON := fs.Bool("json", false, "print the quotas and usage as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef(fs, "use: hutch tenant quota get [TENANT]")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	id := ""
	if len(pos) == 1 {
		id = pos[0]
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
	if *asJSON {
		return printJSON(e.stdout, q)
	}
	printQuotas(e, q)
	return nil
}

// quotaSet is `hutch tenant quota set TENANT --memory-mb 4096 …`: the
// quotas named change, the others stay as they are.
func quotaSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tenant quota set", "hutch tenant quota set [flags] TENANT   (admin; each value a number, 0 for no limit, or default)")
	flags := map[string]*quotaFlag{}
	for _, name := range []string{"sandboxes", "memory-mb", "cpu", "pids", "disk-mb"} {
		f := &quotaFlag{float: name == "cpu"}
		flags[name] = f
		fs.Var(f, name, quotaHelp[name])
	}
	asJSON := fs.Bool("json", false, "print the quotas and usage as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "use: hutch tenant quota set [flags] TENANT")
	}
	set := 0
	fs.Visit(func(f *flag.Flag) {
		if _, ok := flags[f.Name]; ok {
			set++
		}
	})
	if set == 0 {
		return usagef(fs, "name at least one quota to set, e.g. --memory-mb 8192")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	cur, err := c.TenantQuotas(ctx, pos[0])
	if err != nil {
		return err
	}
	q := cur.Set
	flags["sandboxes"].apply(&q.Sandboxes)
	flags["memory-mb"].apply(&q.MemoryMB)
	flags["cpu"].applyFloat(&q.CPU)
	flags["pids"].apply(&q.Pids)
	flags["disk-mb"].apply(&q.DiskMB)
	out, err := c.SetTenantQuotas(ctx, pos[0], q)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, out)
	}
	printQuotas(e, out)
	return nil
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
