package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/storetest"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := open(t, filepath.Join(t.TempDir(), FileName))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	})
}

func TestPragmas(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	defer s.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		db     string
		pragma string
		want   string
	}{
		{"writer", "journal_mode", "wal"},
		{"writer", "foreign_keys", "1"},
		{"writer", "synchronous", "1"}, // NORMAL
		{"writer", "busy_timeout", "5000"},
		{"reader", "journal_mode", "wal"},
		{"reader", "foreign_keys", "1"},
		{"reader", "query_only", "1"},
		{"reader", "busy_timeout", "5000"},
	} {
		db := s.w
		if tt.db == "reader" {
			db = s.r
		}
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
			t.Errorf("%s PRAGMA %s: %v", tt.db, tt.pragma, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s PRAGMA %s = %q, want %q", tt.db, tt.pragma, got, tt.want)
		}
	}
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	ctx := tenancy.System(context.Background())
	s := open(t, path)
	tn := store.Tenant{ID: ids.New(), Name: "kept"}
	if err := s.CreateTenant(ctx, tn); err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	sb := &store.Sandbox{TenantID: tn.ID, State: api.StateRunning, Labels: map[string]string{"a": "b"}}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	versions := schemaVersions(t, s)
	if len(versions) == 0 {
		t.Fatal("no migrations recorded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for range 2 {
		s = open(t, path)
		if diff := cmp.Diff(versions, schemaVersions(t, s)); diff != "" {
			t.Errorf("schema_migrations after reopen (-first +now):\n%s", diff)
		}
		got, err := s.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatalf("GetSandbox after reopen: %v", err)
		}
		if diff := cmp.Diff(sb, got); diff != "" {
			t.Errorf("sandbox after reopen (-want +got):\n%s", diff)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', '')`); err != nil {
		t.Fatalf("insert: %v", err)
	}
	s.Close()
	if s, err := Open(path); err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer binary succeeded")
	}
}

func TestMigrationsOrdered(t *testing.T) {
	ms, err := store.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatalf("migrations: %v", err)
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d is %s: versions must count up from 1 without gaps", i, m.Name)
		}
	}
}

func TestOpenBadPath(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", filepath.Join(dir, "a?b.db"), filepath.Join(dir, "missing", "dir", FileName)} {
		if s, err := Open(path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("Open made a directory: %v", err)
	}
}

func schemaVersions(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.r.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("schema_migrations: %v", err)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestOwnerOnly: the database and its WAL files are readable by hutch's
// user only, whatever the umask.
func TestOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	defer s.Close()
	if err := s.CreateTenant(tenancy.System(context.Background()), store.Tenant{ID: ids.New(), Name: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o; want 0600", p, st.Mode().Perm())
		}
	}
}

// TestStmtsBounded: queries whose shape a caller chooses (a list of any
// length) do not grow the statement cache without end; past the bound
// they still answer.
func TestStmtsBounded(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for n := 1; n <= maxStmts+50; n++ {
		q := "SELECT 1 WHERE 1 IN (?" + strings.Repeat(", ?", n-1) + ")"
		args := make([]any, n)
		for i := range args {
			args[i] = 1
		}
		var one int
		if err := s.reads.QueryRowContext(ctx, q, args...).Scan(&one); err != nil || one != 1 {
			t.Fatalf("query with %d values: %d, %v", n, one, err)
		}
	}
	if got := len(s.reads.m); got != maxStmts {
		t.Fatalf("%d statements kept, want %d", got, maxStmts)
	}
}
