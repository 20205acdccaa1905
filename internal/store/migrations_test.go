package store

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestMigrations: files are read in order of version, a bad name or a
// version twice is refused, Pending leaves out what a database applied
// and refuses a version it does not know.
func TestMigrations(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("B")},
		"m/0010_c.sql": {Data: []byte("C")},
		"m/0001_a.sql": {Data: []byte("A")},
	}
	ms, err := ReadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "0001_a.sql", "A"}, {2, "0002_b.sql", "B"}, {10, "0010_c.sql", "C"}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("ReadMigrations (-want +got):\n%s", diff)
	}
	for name, bad := range map[string]fstest.MapFS{
		"a bad name":      {"m/first.sql": {}},
		"a version twice": {"m/0001_a.sql": {}, "m/01_b.sql": {}},
	} {
		if _, err := ReadMigrations(bad, "m"); err == nil {
			t.Errorf("ReadMigrations of %s: no error", name)
		}
	}
	pending, err := Pending(ms, []int{2})
	if err != nil || !cmp.Equal(pending, []Migration{ms[0], ms[2]}) {
		t.Errorf("Pending after 2 = %v, %v; want 1 and 10", pending, err)
	}
	if _, err := Pending(ms, []int{1, 11}); err == nil || !strings.Contains(err.Error(), "schema version 11") {
		t.Errorf("Pending with an unknown version: %v", err)
	}
}
