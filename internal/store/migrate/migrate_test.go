package migrate

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// holdEnv makes the test binary a process that holds the SQLite file it
// names open until its stdin closes, as a running hutch serve does.
const holdEnv = "HUTCH_TEST_MIGRATE_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		hold(path)
		return
	}
	testutil.RunWithPostgres(m)
}

func hold(path string) {
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("open")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	s.Close()
}

// filled returns the path of a SQLite file filled with every kind of
// record, closed.
func filled(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(path)
	must(t, "sqlite.Open", err)
	fill(t, s)
	must(t, "Close", s.Close())
	return path
}

// readSQLite reads everything the SQLite file at path holds, and closes
// it: the copy refuses a file this process holds open too.
func readSQLite(t *testing.T, path string) dump {
	t.Helper()
	s, err := sqlite.Open(path)
	must(t, "sqlite.Open", err)
	defer s.Close()
	return read(t, s)
}

// openPostgres opens dsn, closed when t ends.
func openPostgres(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	must(t, "postgres.Open", err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMigrate: a SQLite store with every kind of record, copied into a
// new Postgres database, reads back through the Postgres store's API
// record for record as it reads through SQLite's: ids, revisions, times,
// labels, sealed bytes, tenants' states, tasks' order, usage. A write
// after the copy takes a revision, an event id and a task place after
// the copied ones. A second copy into the same database is refused and
// changes nothing.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filled(t)
	dsn := testutil.PostgresURL(t)

	var seen []Progress
	rep, err := Run(ctx, Options{From: "sqlite://" + path, To: dsn, Progress: func(p Progress) { seen = append(seen, p) }})
	must(t, "Run", err)

	want := readSQLite(t, path)
	pg := openPostgres(t, dsn)
	got := read(t, pg)
	// The two stores list nothing as nil and as empty: the same.
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Postgres after the copy (-sqlite +postgres):\n%s", diff)
	}
	if len(want.Tenants) != 3 || len(want.Sandboxes) != 4 || len(want.Events) != 5 || len(want.Tasks) != 1 {
		t.Fatalf("the fill made %d tenants, %d sandboxes, %d events, %d apps with tasks: the test reads less than it should",
			len(want.Tenants), len(want.Sandboxes), len(want.Events), len(want.Tasks))
	}

	// The report and the progress say what was copied.
	rows := map[string]int64{}
	for _, tc := range rep.Tables {
		rows[tc.Table] = tc.Rows
	}
	for table, n := range map[string]int64{"tenants": 3, "sandboxes": 4, "sandbox_labels": 2, "events": 5, "app_tasks": 3, "app_task_log": 6, "secrets": 2} {
		if rows[table] != n {
			t.Errorf("report: %s %d rows, want %d (%+v)", table, rows[table], n, rep.Tables)
		}
	}
	if last := seen[len(seen)-1]; last.Table != "node_usage" || last.Rows != last.Total {
		t.Errorf("the last progress = %+v, want node_usage's end", last)
	}
	if rep.SealedBy["key-one"] != 3 || rep.DryRun {
		t.Errorf("report: sealed by %v, dry run %v; want 3 values of key-one", rep.SealedBy, rep.DryRun)
	}
	var maxRev int64
	for _, sb := range want.Sandboxes {
		maxRev = max(maxRev, sb.Rev)
	}
	if rep.SandboxRev != maxRev || rep.EventID != want.Events[len(want.Events)-1].ID {
		t.Errorf("clocks at %d, %s; want %d, %s", rep.SandboxRev, rep.EventID, maxRev, want.Events[len(want.Events)-1].ID)
	}

	// Writes after the copy come after it.
	acme := want.Tenants[0].ID
	for _, tn := range want.Tenants {
		if tn.Name == "acme" {
			acme = tn.ID
		}
	}
	sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "process"}
	must(t, "CreateSandbox", pg.CreateSandbox(admin(acme), sb))
	if sb.Rev != maxRev+1 {
		t.Errorf("a new sandbox's revision = %d, want %d", sb.Rev, maxRev+1)
	}
	ev := &store.Event{Type: "tenant.note", Message: "after"}
	must(t, "AppendEvent", pg.AppendEvent(admin(acme), ev))
	if ev.ID <= rep.EventID {
		t.Errorf("a new event's id %s is not after the copied %s", ev.ID, rep.EventID)
	}
	app := want.Apps[acme][0]
	task := &api.Task{AppID: app.ID, Status: api.TaskQueued, Command: []string{"after"}}
	must(t, "CreateTask", pg.CreateTask(admin(acme), task))
	tasks, err := pg.ListTasks(admin(acme), app.ID, 0)
	must(t, "ListTasks", err)
	if len(tasks) != 4 || tasks[0].ID != task.ID || tasks[1].ID != want.Tasks[app.ID][0].ID {
		t.Errorf("tasks after one more = %v, want the new one first, then the copied in their order", taskIDs(tasks))
	}
	// A suspended tenant stays closed to new rows.
	for _, tn := range want.Tenants {
		if tn.State == api.TenantSuspended {
			err := pg.CreateSandbox(admin(tn.ID), &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "process"})
			if !errdefs.HasCode(err, "tenant_suspended") {
				t.Errorf("a sandbox in the suspended tenant: %v", err)
			}
		}
	}

	// A second copy is refused and leaves the database as it was.
	before := read(t, pg)
	_, err = Run(ctx, Options{From: path, To: dsn})
	if !errdefs.HasCode(err, "target_not_empty") {
		t.Fatalf("a second copy: %v, want target_not_empty", err)
	}
	if diff := cmp.Diff(before, read(t, pg)); diff != "" {
		t.Errorf("the refused copy changed the database (-before +after):\n%s", diff)
	}
}

func taskIDs(ts []api.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestDryRun: a dry run reports what it would copy and leaves the
// database without even the schema.
func TestDryRun(t *testing.T) {
	ctx := context.Background()
	path := filled(t)
	dsn := testutil.PostgresURL(t)
	rep, err := Run(ctx, Options{From: path, To: dsn, DryRun: true})
	must(t, "Run", err)
	if !rep.DryRun || len(rep.Tables) != len(copied)+1 || rep.Tables[0].Table != "tenants" || rep.Tables[0].Rows != 3 {
		t.Errorf("dry run's report = %+v", rep)
	}
	conn, err := pgx.Connect(ctx, dsn)
	must(t, "connect", err)
	defer conn.Close(ctx)
	var n int
	must(t, "count tables", conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n))
	if n != 0 {
		t.Errorf("the dry run left %d tables", n)
	}
	// The real copy after it works.
	if _, err := Run(ctx, Options{From: path, To: dsn}); err != nil {
		t.Fatalf("Run after the dry run: %v", err)
	}
}

// TestPlanCoversSchemas: plan.go names every table of both stores'
// schemas, as this build makes them. A table added to either fails here
// until the plan says what becomes of it.
func TestPlanCoversSchemas(t *testing.T) {
	ctx := context.Background()
	src, err := openSource(ctx, filled(t))
	must(t, "openSource", err)
	defer src.close()
	sqliteTables, err := src.tables(ctx)
	must(t, "tables", err)

	dsn := testutil.PostgresURL(t)
	openPostgres(t, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	must(t, "connect", err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)
	must(t, "list tables", err)
	postgresTables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, "list tables", err)

	if err := checkTables(sqliteTables, postgresTables); err != nil {
		t.Fatal(err)
	}
	err = checkTables(append(sqliteTables, "widgets"), append(postgresTables, "gadgets"))
	if err == nil || !strings.Contains(err.Error(), "sqlite widgets") || !strings.Contains(err.Error(), "postgres gadgets") {
		t.Errorf("tables the plan does not name: %v, want both named", err)
	}
}

// TestRefusesHeldSource: a file another process holds open, as a
// running hutch serve does, is refused before anything is read or
// written; once that process has closed it, the copy runs.
func TestRefusesHeldSource(t *testing.T) {
	path := filled(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	must(t, "stdin", err)
	stdout, err := cmd.StdoutPipe()
	must(t, "stdout", err)
	must(t, "start the holder", cmd.Start())
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(stdout).ReadString('\n'); line <- l }()
	select {
	case l := <-line:
		if strings.TrimSpace(l) != "open" {
			t.Fatalf("the holder said %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder did not open the file within 30s")
	}

	dsn := testutil.PostgresURL(t)
	_, err = Run(context.Background(), Options{From: path, To: dsn})
	if !errdefs.HasCode(err, "source_in_use") {
		t.Fatalf("Run on a held file: %v, want source_in_use", err)
	}
	stdin.Close()
	must(t, "the holder's end", cmd.Wait())
	if _, err := Run(context.Background(), Options{From: path, To: dsn}); err != nil {
		t.Fatalf("Run once the holder closed it: %v", err)
	}
}

// TestSourceLockedWhileRead: while the copy reads the file, it holds
// its write lock: a hutch serve starting then fails at its first write
// (its migrations) rather than write what the copy would miss.
func TestSourceLockedWhileRead(t *testing.T) {
	ctx := context.Background()
	path := filled(t)
	src, err := openSource(ctx, path)
	must(t, "openSource", err)
	defer src.close()
	if _, err := src.count(ctx, "tenants"); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(path)
	if err == nil {
		s.Close()
		t.Fatal("the SQLite store opened for writing while the copy read the file")
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Errorf("the store's open while the copy reads: %v, want database is locked", err)
	}
}

// TestOpenWaitsForCopy: a hutch serve starting on the target while the
// copy runs (the Postgres store's Open) waits for it, on the migration
// lock the copy holds, and then finds the copy's rows, not an empty
// database it would bootstrap.
func TestOpenWaitsForCopy(t *testing.T) {
	ctx := context.Background()
	path := filled(t)
	dsn := testutil.PostgresURL(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer close(resume) // a Fatal below must not leave the copy paused
	copied := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Options{From: path, To: dsn, Progress: func(p Progress) {
			if p.Table == "events" {
				once.Do(func() { close(paused); <-resume })
			}
		}})
		copied <- err
	}()
	select {
	case <-paused:
	case err := <-copied:
		t.Fatalf("the copy ended before its pause: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the copy did not reach events within 30s")
	}
	type opening struct {
		s   *postgres.Store
		err error
	}
	opened := make(chan opening, 1)
	go func() {
		s, err := postgres.Open(ctx, dsn)
		opened <- opening{s, err}
	}()
	select {
	case o := <-opened:
		if o.s != nil {
			o.s.Close()
		}
		t.Fatalf("Open returned (%v) while the copy held its transaction", o.err)
	case <-time.After(time.Second):
	}
	resume <- struct{}{}
	select {
	case err := <-copied:
		must(t, "Run", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the copy did not end within 30s of its resumption")
	}
	select {
	case o := <-opened:
		must(t, "Open", o.err)
		defer o.s.Close()
		tenants, err := o.s.ListTenants(system())
		if err != nil || len(tenants) != 3 {
			t.Errorf("after the wait, Open finds %d tenants, %v; want the 3 copied", len(tenants), err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return within 30s of the copy's end")
	}
}

// TestBadArguments: what is not a source or a target is a clear 4xx.
func TestBadArguments(t *testing.T) {
	dir, src := t.TempDir(), filled(t)
	if err := os.WriteFile(filepath.Join(dir, "what?.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to, code string
	}{
		{"mysql://x", "postgres://localhost/x", "invalid_source"},
		{"sqlite://", "postgres://localhost/x", "invalid_source"},
		{"sqlite://" + filepath.Join(dir, "nope.db"), "postgres://localhost/x", "source_not_found"},
		{"sqlite://" + dir, "postgres://localhost/x", "source_not_found"},
		{src, "mysql://localhost/x", "invalid_target"},
		{src, "no such thing", "invalid_target"},
		{"sqlite://" + dir + "/what?.db", "postgres://localhost/x", "invalid_source"},
	} {
		_, err := Run(context.Background(), Options{From: tc.from, To: tc.to})
		if !errdefs.HasCode(err, tc.code) {
			t.Errorf("Run(%s, %s) = %v, want %s", tc.from, tc.to, err, tc.code)
		}
	}
}

// TestFailedCopyLeavesNothing: a copy that fails part way, here on the
// last table but two with a time no store wrote, leaves the target as
// it found it: no rows, no schema.
func TestFailedCopyLeavesNothing(t *testing.T) {
	ctx := context.Background()
	path := filled(t)
	db, err := sql.Open("sqlite", path)
	must(t, "open", err)
	_, err = db.ExecContext(ctx, `UPDATE events SET created_at = 'yesterday' WHERE rowid = (SELECT max(rowid) FROM events)`)
	must(t, "spoil an event", err)
	must(t, "close", db.Close())

	dsn := testutil.PostgresURL(t)
	_, err = Run(ctx, Options{From: path, To: dsn})
	if err == nil || !strings.Contains(err.Error(), "copy events") || !strings.Contains(err.Error(), "yesterday") {
		t.Fatalf("Run with a spoilt event: %v, want the copy of events to fail on it", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	must(t, "connect", err)
	defer conn.Close(ctx)
	var n int
	must(t, "count tables", conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n))
	if n != 0 {
		t.Errorf("the failed copy left %d tables", n)
	}
}
