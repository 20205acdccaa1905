package store

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one file of a SQL store's embedded migrations,
// NNNN_name.sql, applied in order of NNNN. A store records each version
// it applied, so re-opening a database applies only what is new. Never
// edit an applied file: add one.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ReadMigrations returns the migrations in fsys's directory dir, in
// order.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range names {
		name := path.Base(p)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].Name, ms[i].Name)
		}
	}
	return ms, nil
}

// Pending returns those of ms whose versions are not in applied, the
// versions a database records, in order. A version applied that ms
// lacks was written by a newer hutch: an error.
func Pending(ms []Migration, applied []int) ([]Migration, error) {
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		done[v] = true
	}
	var out []Migration
	for _, m := range ms {
		if !done[m.Version] {
			out = append(out, m)
		}
		delete(done, m.Version)
	}
	for v := range done {
		return nil, fmt.Errorf("database has schema version %d, which this binary does not know: it was written by a newer hutch", v)
	}
	return out, nil
}
