package drivertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func testFiles(t *testing.T, s Suite) {
	d := s.New(t)
	sb := create(t, d, spec(api.Limits{}))
	ctx := context.Background()
	if _, err := sb.agent.WriteFile(ctx, "dir-missing/x", "", false, strings.NewReader("x")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("write under a missing directory: %v, want not found", err)
	}
	if _, err := sb.agent.Mkdir(ctx, api.MkdirRequest{Path: "a/b/c"}); err != nil {
		t.Fatal(err)
	}
	fi, err := sb.agent.WriteFile(ctx, "a/b/c/hello.txt", "0640", false, strings.NewReader("hello files\n"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != 12 || fi.Mode != "0640" {
		t.Fatalf("written file info = %+v", fi)
	}
	// The sandbox's processes see what the file API wrote, and the reverse.
	if got := sh(t, sb, "cat a/b/c/hello.txt"); got != "hello files\n" {
		t.Fatalf("cat = %q", got)
	}
	sh(t, sb, "printf 'from exec' > a/from-exec")
	rc, err := sb.agent.ReadFile(ctx, "a/from-exec")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "from exec" {
		t.Fatalf("read = %q", b)
	}
	if _, err := sb.agent.ReadFile(ctx, "../../../../etc/passwd"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("read with ..: %v, want invalid", err)
	}
	// A symlink pointing at a host file resolves inside the sandbox.
	sh(t, sb, "ln -s /etc/hostname link-out && ln -s ../../../../../../../../.. dir-out")
	if rc, err := sb.agent.ReadFile(ctx, "link-out"); err == nil {
		got, _ := io.ReadAll(rc)
		rc.Close()
		host, _ := os.ReadFile("/etc/hostname")
		if bytes.Equal(got, host) {
			t.Fatal("a symlink in the sandbox read the host's /etc/hostname")
		}
	}
	// A symlinked directory pointing far up lists the sandbox's own root,
	// never the host's: a marker made in the host's root must not appear.
	marker := "hutch-drivertest-" + sb.id
	if err := os.Mkdir("/"+marker, 0o700); err == nil {
		defer os.Remove("/" + marker)
		if list, err := sb.agent.List(ctx, "dir-out"); err == nil {
			for _, e := range list.Entries {
				if e.Name == marker {
					t.Fatalf("a symlinked directory listed the host root: %v", list.Entries)
				}
			}
		}
	}
	big := bytes.Repeat([]byte("x"), 9<<20)
	if _, err := sb.agent.WriteFile(ctx, "big", "", false, bytes.NewReader(big)); !errors.Is(err, errdefs.ErrTooLarge) {
		t.Fatalf("oversized write: %v, want too large", err)
	}
	if _, err := sb.agent.Stat(ctx, "big"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("an oversized write left a file behind: %v", err)
	}
}
