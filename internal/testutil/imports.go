package testutil

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// StdAndXSysOnly fails t unless the non-test Go files of the current
// directory import only the standard library, golang.org/x/sys and the
// packages in also (which keep the same rule), and no cgo: the rule for
// packages hutch-agent links (a small static binary).
func StdAndXSysOnly(t *testing.T, also ...string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(path, "/")
			if path == "C" {
				t.Errorf("%s uses cgo; hutch-agent must be a static binary without it", name)
			} else if strings.Contains(first, ".") && !strings.HasPrefix(path, "golang.org/x/sys/") && !slices.Contains(also, path) {
				t.Errorf("%s imports %s; this package may link only the standard library and golang.org/x/sys", name, path)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("found no source files to check")
	}
}
