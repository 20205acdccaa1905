package main

import (
	"strings"
	"testing"
)

// TestCompletion: the completion scripts are there for bash, zsh and fish,
// and an id argument completes with the sandboxes that are not destroyed.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out, errOut, code := runHutch("completion", shell); code != 0 || !strings.Contains(out, "hutch") {
			t.Errorf("completion %s: exit %d, stdout %.40q, stderr %q", shell, code, out, errOut)
		}
	}
	s := newFakeServer(t)
	out, _, code, _ := s.run("", "__complete", "exec", "")
	if code != 0 || !strings.Contains(out, sbRunning+"\t") || strings.Contains(out, sbDestroyed) {
		t.Errorf("__complete exec: exit %d, stdout %q; want the running sandbox only", code, out)
	}
	if out, _, _ = runHutch("__complete", "exec", ""); strings.Contains(out, "01") {
		t.Errorf("__complete with no server: %q; want no ids", out)
	}
}
