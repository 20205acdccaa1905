package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procMem is the memory of the processes sandboxes hold, read from /proc.
type procMem struct {
	procs    int   // processes counted
	agents   int   // of them, hutch-agent processes
	inCgroup int   // of them, those in the memory cgroup given
	rss      int64 // sum of VmRSS, bytes
	pss      int64 // sum of Pss from smaps_rollup, bytes
}

// sandboxMem sums the memory of every process a sandbox may hold: each
// hutch-agent (its /proc/<pid>/exe is agentPath or a file named
// hutch-agent, or its comm is "hutch-agent", whoever its parent is) and each other descendant of this
// process (what a driver starts besides agents). The server runs in this
// process, so nothing else descends from it. Processes that exit while
// they are read are left out. inCgroup, if set, says whether a process
// counts towards procMem.inCgroup.
func sandboxMem(agentPath string, inCgroup func(pid int) bool) (procMem, error) {
	if p, err := filepath.Abs(agentPath); err == nil && agentPath != "" {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			agentPath = r
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return procMem{}, err
	}
	parent := map[int]int{}
	agent := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, comm, err := procStat(pid)
		if err != nil {
			continue
		}
		parent[pid] = ppid
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		// The namespace driver's agents run a copy in their template and
		// are no children of this process (their first stage exits).
		agent[pid] = comm == "hutch-agent" || (agentPath != "" && exe == agentPath) || filepath.Base(exe) == "hutch-agent"
	}
	self := os.Getpid()
	descends := func(pid int) bool {
		for i := 0; pid > 1 && i < 64; i++ {
			if pid = parent[pid]; pid == self {
				return true
			}
		}
		return false
	}
	var m procMem
	for pid := range parent {
		if !agent[pid] && !descends(pid) {
			continue
		}
		rss, err := procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
		if err != nil {
			continue // exited, or a kernel thread
		}
		pss, err := procField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
		if err != nil {
			continue
		}
		m.procs++
		if agent[pid] {
			m.agents++
		}
		if inCgroup != nil && inCgroup(pid) {
			m.inCgroup++
		}
		m.rss += rss
		m.pss += pss
	}
	return m, nil
}

// procStat returns a process's parent pid and comm from /proc/<pid>/stat.
func procStat(pid int) (ppid int, comm string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, string(b[open+1 : end]), err
}

// memAvailable returns the host's MemAvailable in bytes.
func memAvailable() (int64, error) {
	return procField("/proc/meminfo", "MemAvailable:")
}

// procField returns the value, in bytes, of the first "key N kB" line of a
// /proc file.
func procField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key)
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}
