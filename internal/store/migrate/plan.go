package migrate

import (
	"fmt"
	"slices"
	"strings"
)

// table is one table copied from the SQLite file into Postgres, in the
// order of copied: a row's foreign keys name rows of tables before it.
// Both schemas have the table under the same name, and each column of
// the Postgres table is the SQLite table's column of the same name
// (converted by the Postgres column's type, convert.go), except those
// made names.
type table struct {
	name string
	// made are Postgres's columns with no column of that name in the
	// SQLite table: each is written by the copy of this table itself
	// (sandboxes' labels, from sandbox_labels) or by Postgres
	// (app_tasks' seq, given in the order of the rows' copy).
	made []string
	// order is the SQLite ORDER BY of the rows' copy, where it matters:
	// app_tasks in the order they were stored (their rowid), which is
	// the order Postgres's seq keeps.
	order string
}

// copied are the tables whose rows are copied, in the order copied.
var copied = []table{
	{name: "tenants"},
	{name: "nodes"},
	{name: "api_keys"},
	{name: "sandboxes", made: []string{"labels"}},
	{name: "sandbox_ports"},
	{name: "secrets"},
	{name: "templates"},
	{name: "template_nodes"},
	{name: "snapshots"},
	{name: "volumes"},
	{name: "settings"},
	{name: "apps"},
	{name: "app_config"},
	{name: "app_tasks", made: []string{"seq"}, order: "rowid"},
	{name: "app_task_log"},
	{name: "events"},
	{name: "tenant_usage"},
	{name: "node_usage"},
}

// The tables of one schema only, and what becomes of each.
var (
	// sqliteOnly are SQLite tables folded into a copied table's made
	// column.
	sqliteOnly = map[string]string{
		"sandbox_labels": "sandboxes.labels",
	}
	// postgresOnly are Postgres tables of one row the copy sets after
	// the rows (clocks.go).
	postgresOnly = map[string]string{
		"sandbox_clock": "the greatest sandbox revision copied",
		"event_clock":   "the greatest event id copied",
	}
	// neither are tables of both schemas that are not copied: each
	// store's record of its own migrations, and the leases of fleet-wide
	// work, which whoever holds them renews within seconds.
	neither = []string{"schema_migrations", "leases"}
)

// checkTables fails unless every table of the SQLite schema and every
// one of the Postgres schema is copied or named above: a table added to
// either schema stops the copy (and the package's tests) until this
// plan says what becomes of it, rather than being left behind.
func checkTables(sqliteTables, postgresTables []string) error {
	var unplanned []string
	planned := func(name string, only map[string]string) bool {
		_, ok := only[name]
		return ok || slices.Contains(neither, name) || slices.ContainsFunc(copied, func(t table) bool { return t.name == name })
	}
	for _, name := range sqliteTables {
		if !planned(name, sqliteOnly) {
			unplanned = append(unplanned, "sqlite "+name)
		}
	}
	for _, name := range postgresTables {
		if !planned(name, postgresOnly) {
			unplanned = append(unplanned, "postgres "+name)
		}
	}
	for _, t := range copied {
		if !slices.Contains(sqliteTables, t.name) || !slices.Contains(postgresTables, t.name) {
			unplanned = append(unplanned, "copied "+t.name+" missing from a schema")
		}
	}
	if len(unplanned) > 0 {
		return fmt.Errorf("the migration's plan (internal/store/migrate/plan.go) does not match the schemas: %s", strings.Join(unplanned, ", "))
	}
	return nil
}
