package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestKeyRolesMigration: the keys of a database from before roles and
// creators keep every field, get no creator, and can make and revoke keys
// as any other.
func TestKeyRolesMigration(t *testing.T) {
	const version = 9 // migrations/0009_key_roles.sql
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", dsn(path, map[string]string{"foreign_keys": "1"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := store.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= version {
			break
		}
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, '')`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO tenants VALUES ('t1', 'old', '2024-01-01T00:00:00.000000Z')`,
		`INSERT INTO api_keys VALUES ('adminkey0000', 't1', 'bootstrap', 'admin', 'hk_adminkey0000', x'01', '2024-01-01T00:00:00.000000Z', NULL)`,
		`INSERT INTO api_keys VALUES ('memberkey000', 't1', 'ci', 'member', 'hk_memberkey000', x'02', '2024-01-02T00:00:00.000000Z', '2024-02-01T00:00:00.000000Z')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	defer s.Close()
	ctx := context.Background()
	k, err := s.LookupKey(ctx, "memberkey000")
	if err != nil {
		t.Fatal(err)
	}
	if k.TenantID != "t1" || k.Name != "ci" || k.Role != api.RoleMember || k.Prefix != "hk_memberkey000" ||
		string(k.Hash) != "\x02" || k.CreatedBy != "" || k.LastUsedAt == nil || k.CreatedAt.Year() != 2024 {
		t.Errorf("migrated key = %+v", k)
	}
	as := tenancy.With(ctx, tenancy.Principal{TenantID: "t1", KeyID: k.ID, Role: k.Role})
	child := store.Key{ID: "childkey0000", TenantID: "t1", Role: api.RoleReader, Prefix: "hk_childkey0000", Hash: []byte{3}}
	if err := s.CreateKey(as, child); err != nil {
		t.Fatalf("a migrated key makes a reader: %v", err)
	}
	gone, err := s.DeleteKey(as, k.ID, true)
	if err != nil || len(gone) != 2 {
		t.Fatalf("cascade from a migrated key: %v, %v", gone, err)
	}
	if _, err := s.LookupKey(ctx, "adminkey0000"); err != nil {
		t.Errorf("the admin key: %v", err)
	}
}
