package history

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// FuzzDecodeManifest: a manifest on disk is untrusted (the process
// driver's sandbox shares the agent's user); whatever it holds, decoding
// does not panic, and what it accepts keeps every path inside the tree.
func FuzzDecodeManifest(f *testing.F) {
	s := newStore(f, Options{})
	tree := newTree(f)
	write(f, filepath.Join(tree, "a/b"), "b")
	must(f, os.Symlink("a/b", filepath.Join(tree, "l")))
	checkpoint(f, s, tree, KindTask)
	good, err := os.ReadFile(s.manifestPath("00000001"))
	must(f, err)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"a/b"`), []byte(`"a/../../b"`), 1))
	f.Add(bytes.Replace(good, []byte(`"path":"l"`), []byte(`"path":"/l"`), 1))
	f.Add([]byte(`{"version":1,"id":"00000001","files":0,"entries":1}` + "\n" + `{"path":".","type":"dir"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(bytes.NewReader(data), 1000)
		if err != nil {
			return
		}
		if m.entries[0].Path != "." || m.entries[0].Type != TypeDir {
			t.Fatalf("first entry %+v", m.entries[0])
		}
		dirs := map[string]bool{".": true}
		for i, e := range m.entries[1:] {
			if !validRel(e.Path) || !dirs[path.Dir(e.Path)] {
				t.Fatalf("entry %d: path %q accepted", i+1, e.Path)
			}
			if e.Type == TypeDir {
				dirs[e.Path] = true
			}
			if e.Type == TypeFile && !validSum(e.SHA256) {
				t.Fatalf("entry %d: sum %q accepted", i+1, e.SHA256)
			}
		}
	})
}
