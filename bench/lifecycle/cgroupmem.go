package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memCgroup is a memory cgroup: its path inside the hierarchy and the file
// holding its usage, which counts user pages, page cache and kernel memory
// charged to every process in it and below it.
type memCgroup struct {
	path  string // as in /proc/<pid>/cgroup
	usage string // memory.usage_in_bytes (v1) or memory.current (v2)
	v1    bool
}

// ownMemCgroup returns the memory cgroup of pid, v1 or v2; ok is false
// when it has none.
func ownMemCgroup(pid int) (cg memCgroup, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cg, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				return memCgroup{f[2], filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.usage_in_bytes"), true}, true
			}
		}
		if f[0] == "0" && f[1] == "" {
			cg = memCgroup{f[2], filepath.Join("/sys/fs/cgroup", f[2], "memory.current"), false}
		}
	}
	if cg.usage == "" {
		return cg, false
	}
	if _, err := os.Stat(cg.usage); err != nil {
		return cg, false
	}
	return cg, true
}

// read returns the cgroup's usage in bytes.
func (cg memCgroup) read() (int64, error) {
	b, err := os.ReadFile(cg.usage)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// holds reports whether pid's memory cgroup is cg or below it.
func (cg memCgroup) holds(pid int) bool {
	own, ok := ownMemCgroup(pid)
	if !ok || own.v1 != cg.v1 {
		return false
	}
	return own.path == cg.path || strings.HasPrefix(own.path, strings.TrimSuffix(cg.path, "/")+"/")
}

// sandboxCgroupsMem sums the memory usage of every sandbox cgroup under
// parent (the namespace driver's <parent>/<id>, agent and commands, kernel
// memory included); ok is false when there is no such parent.
func sandboxCgroupsMem(parent string) (total int64, ok bool) {
	for _, pattern := range []string{
		filepath.Join("/sys/fs/cgroup/memory", parent, "*", "memory.usage_in_bytes"),
		filepath.Join("/sys/fs/cgroup", parent, "*", "memory.current"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if n, err := (memCgroup{usage: f}).read(); err == nil {
				total, ok = total+n, true
			}
		}
		if ok {
			return total, true
		}
	}
	return 0, false
}
