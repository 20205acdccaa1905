package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// TestCpSummary: a copy ends with what it moved, as a line on stderr or
// under --json as JSON (on stderr when stdout carries the file).
func TestCpSummary(t *testing.T) {
	s := newFakeServer(t)
	dst := filepath.Join(t.TempDir(), "got.txt")
	for _, tc := range []struct {
		stdin      string
		args       []string
		out, notes string
	}{
		{"hello", []string{"cp", "-", sbRunning + ":a.txt"}, "", "hutch: copied 1 file, 5 bytes\n"},
		{"", []string{"cp", sbRunning + ":a.txt", "-"}, "hello", "hutch: copied 1 file, 5 bytes\n"},
		{"", []string{"cp", sbRunning + ":a.txt", dst}, "", "hutch: copied 1 file, 5 bytes\n"},
		{"hello", []string{"--json", "cp", "-", sbRunning + ":a.txt"}, `{"path":"/w/a.txt","files":1,"bytes":5}`, ""},
		{"", []string{"--json", "cp", sbRunning + ":a.txt", "-"}, "hello", `{"path":"-","files":1,"bytes":5}`},
	} {
		out, errOut, code, _ := s.run(tc.stdin, tc.args...)
		if code != 0 || compact(out) != tc.out || compact(errOut) != tc.notes {
			t.Errorf("hutch %q: exit %d, stdout %q, stderr %q; want %q, %q", tc.args, code, out, errOut, tc.out, tc.notes)
		}
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "hello" {
		t.Errorf("downloaded file: %q, %v", b, err)
	}
}

// compact is s with JSON compacted, or s as it is.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// TestCpLocalErrors: an error of this machine's side says it is local,
// not an HTTP failure, and a directory that cannot be read fails the copy
// even when the server took what it was sent.
func TestCpLocalErrors(t *testing.T) {
	s := newFakeServer(t)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cp", missing, sbRunning + ":x"}, "hutch: local: open " + missing + ": no such file or directory\n"},
		{[]string{"cp", "-r", missing, sbRunning + ":t"}, "hutch: local: lstat " + missing + ": no such file or directory\n"},
		{[]string{"cp", sbRunning + ":a.txt", filepath.Join(missing, "x")}, "hutch: local: open " + filepath.Join(missing, "x") + ": no such file or directory\n"},
	} {
		out, errOut, code, _ := s.run("", tc.args...)
		if code != 1 || errOut != tc.want || out != "" {
			t.Errorf("hutch %q: exit %d, stdout %q, stderr %q; want 1 and %q", tc.args, code, out, errOut, tc.want)
		}
		if strings.Contains(errOut, "copied") {
			t.Errorf("hutch %q: a failed copy reported a summary", tc.args)
		}
	}
}

// TestCpDir: a directory upload reports the server's count.
func TestCpDir(t *testing.T) {
	s := newFakeServer(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644)
	out, _, code, reqs := s.run("", "--json", "cp", "-r", dir, sbRunning+":t")
	var res api.TarResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Path != "/w/t" {
		t.Errorf("cp -r: exit %d, stdout %q (%v)", code, out, err)
	}
	if len(reqs) != 1 || !strings.HasPrefix(reqs[0], "PUT /v1/sandboxes/"+sbRunning+"/files/tar?") {
		t.Errorf("cp -r: requests %q", reqs)
	}
}
