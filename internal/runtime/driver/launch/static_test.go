package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckStatic refuses a dynamically linked binary and takes a static
// Go one.
func TestCheckStatic(t *testing.T) {
	dyn, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	if err := CheckStatic(dyn); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("CheckStatic(%s) = %v; want the cgo error", dyn, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := CheckStatic(bin); err != nil {
		t.Errorf("CheckStatic(a static binary) = %v", err)
	}
}
