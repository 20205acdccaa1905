package internal_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestPackageDocs: every package of the module says in a doc comment what
// it owns, generated code included. A package's doc is the comment on
// the package clause of any of its files (test files left out), as go
// doc reads it.
func TestPackageDocs(t *testing.T) {
	for _, p := range list(t) {
		if !documented(t, p) {
			t.Errorf("%s has no package doc comment: write one (// Package %s ...) in one of its files, doc.go for generated code",
				p.ImportPath, filepath.Base(p.ImportPath))
		}
	}
}

// documented reports whether one of p's files has a package doc comment.
func documented(t *testing.T, p pkg) bool {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && f.Doc.Text() != "" {
			return true
		}
	}
	return false
}
