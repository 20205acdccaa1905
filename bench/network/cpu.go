package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/bench/internal/stat"
)

// cpuUse is the CPU spent by each party to a load: this process (the
// control plane and the load generator), the sandbox's agent, and the HTTP
// server (the host's, or the sandbox's commands).
type cpuUse struct {
	self, agent, server time.Duration
}

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{self: a.self - b.self, agent: a.agent - b.agent, server: a.server - b.server}
}

// parties says where the parties of a load run: the host server's pid,
// or the sandbox whose agent and commands serve.
type parties struct {
	hostServer int    // pid; 0 when the sandbox serves
	sandbox    string // sandbox id; "" for the direct load
}

// sample reads the CPU the parties have spent so far. The sandbox's
// processes are found by their cgroup, which the namespace driver names
// after the sandbox: the agent in <parent>/<id>, its commands under
// <parent>/<id>/box.
func (p parties) sample() cpuUse {
	var u cpuUse
	u.self = stat.SelfCPU()
	if p.hostServer != 0 {
		u.server = procCPU(p.hostServer)
	}
	if p.sandbox == "" {
		return u
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cg, err := os.ReadFile(d + "/cgroup")
		if err != nil {
			continue
		}
		var path string
		for _, line := range bytes.Split(cg, []byte("\n")) {
			// cgroup v2 ("0::/…") or v1's pids controller: one line each.
			if _, rest, ok := bytes.Cut(line, []byte(":pids:")); ok {
				path = string(rest)
				break
			}
			if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok && len(rest) > 1 {
				path = string(rest)
			}
		}
		i := strings.Index(path, "/"+p.sandbox)
		if i < 0 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if strings.Contains(path[i+1+len(p.sandbox):], "/box") {
			u.server += procCPU(pid)
		} else {
			u.agent += procCPU(pid)
		}
	}
	return u
}

// procCPU is the user and system time of process pid, all its threads.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100
