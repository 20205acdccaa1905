package testutil

import (
	"os"
	"strings"
	"testing"
)

// Entries lists the names in dir but those that begin with a dot (what
// a store keeps in flight, before it takes its name).
func Entries(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}
