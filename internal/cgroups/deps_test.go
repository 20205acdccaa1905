package cgroups

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyStdAndXSys guards what hutch-agent links through this
// package: the standard library and golang.org/x/sys, nothing else.
func TestImportsOnlyStdAndXSys(t *testing.T) {
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
			std := !strings.Contains(first, ".")
			if !std && !strings.HasPrefix(path, "golang.org/x/sys/") {
				t.Errorf("%s imports %s; the package may link only the standard library and golang.org/x/sys", name, path)
			}
			if path == "C" {
				t.Errorf("%s uses cgo; the static agent links this package", name)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("found no source files to check")
	}
}
