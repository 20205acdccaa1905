package drivertest

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// escapeAgentProc: the agent is the sandbox's pid 1, but a process the
// host started: its own /proc entries (/proc/self, /proc/thread-self,
// /proc/1, and what leads there: /dev/fd, /proc/net, /proc/mounts) have
// descriptors whose links name host paths. The file API runs in the agent,
// so there "self" is the agent; commands run as the sandbox's user. Neither
// way may show a host path, nor may /proc/net/unix (the agent's socket).
func escapeAgentProc(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	sh(t, a, "ln -s /proc/self/fd fds && ln -s /proc/1 agent")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen strings.Builder
	show := func(what string, v any, err error) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&seen, "%s: %s %v\n", what, b, err)
	}
	for _, p := range []string{"/proc/self/fd", "/proc/1/fd", "/proc/thread-self/fd", "/proc/self/task", "/dev/fd", "fds", "agent/fd", "/proc/self/map_files", "/proc/self"} {
		l, err := a.agent.List(ctx, p)
		show("list "+p, l, err)
	}
	for _, p := range []string{"/proc/self/exe", "/proc/self/cwd", "/proc/self/root", "/proc/1/fd/3", "/dev/fd/3", "fds/4"} {
		st, err := a.agent.Stat(ctx, p)
		show("stat "+p, st, err)
	}
	for _, p := range []string{"/proc/net/unix", "/proc/self/mountinfo", "/proc/mounts", "/proc/self/environ", "/proc/self/cmdline", "/proc/self/maps", "/proc/1/mountinfo"} {
		rc, err := a.agent.ReadFile(ctx, p)
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(rc)
			rc.Close()
		}
		show("read "+p, string(b), err)
	}
	for _, p := range []string{"/proc/1", "agent"} {
		rc, err := a.agent.TarDownload(ctx, p)
		show("tar "+p, nil, err)
		if err != nil {
			continue
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(tr)
			fmt.Fprintf(&seen, "tar %s: %s -> %s %q\n", p, hdr.Name, hdr.Linkname, b)
		}
		rc.Close()
	}
	// And as the sandbox's own commands see them.
	res := run(t, a, "/bin/sh", "-c", "cat /proc/net/unix; ls -l /proc/1/fd /proc/1/cwd /proc/1/exe /proc/1/root /dev/fd/ 2>&1; cat /proc/1/mountinfo /proc/1/environ /proc/1/maps 2>&1")
	fmt.Fprintf(&seen, "commands: %s %s\n", res.Stdout, res.Stderr)
	for _, p := range append(append(forbidden(s), hostDirsOf(a)...), "/sys/fs/cgroup") {
		if namesPath(seen.String(), p) {
			t.Errorf("the agent's /proc shows host path %s:\n%s", p, seen.String())
			break
		}
	}
}

// namesPath reports whether s holds the path p where a path starts and
// ends: /root in "/root/x" or "-> /root", not in "/proc/self/root".
func namesPath(s, p string) bool {
	inPath := func(c byte) bool {
		return c == '/' || c == '.' || c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], p)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		if (start == 0 || !inPath(s[start-1])) && (end == len(s) || s[end] == '/' || !inPath(s[end])) {
			return true
		}
		i = start + 1
	}
}
