package image_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the package apart from hutch's server: its non-test
// files import the standard library, go-containerregistry and errdefs,
// and nothing else.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.Split(path, "/")[0], ".")
			if !std && !strings.HasPrefix(path, "github.com/google/go-containerregistry/") && path != "github.com/hutchdev/hutch/internal/base/errdefs" {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
