package keyfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "some.key")
	k1, err := Load(path, 32)
	if err != nil || len(k1) != 32 {
		t.Fatalf("first Load: %d bytes, %v", len(k1), err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	k2, err := Load(path, 32)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second Load differs: %v", err)
	}
	os.WriteFile(path, []byte("abcd\n"), 0o600)
	if _, err := Load(path, 32); err == nil {
		t.Fatal("a short key was accepted")
	}
	os.WriteFile(path, []byte("not hex\n"), 0o600)
	if _, err := Load(path, 32); err == nil {
		t.Fatal("a key that is not hex was accepted")
	}
}
