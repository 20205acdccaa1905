package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/store"
)

// TestRegistered: the registry opens the store as FileName in the data
// directory, and refuses without one.
func TestRegistered(t *testing.T) {
	reg, ok := store.Lookup(Name)
	if !ok {
		t.Fatalf("%s is not registered", Name)
	}
	dir := t.TempDir()
	st, err := reg.Factory(context.Background(), store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Errorf("no database in the data directory: %v", err)
	}
	if st, err := reg.Factory(context.Background(), store.Options{}); err == nil {
		st.Close()
		t.Error("opened without a data directory")
	}
}
