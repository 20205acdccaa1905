// Package hostproc is what drivers need to know of host processes through
// /proc: whether a recorded process still runs (and is not a reused pid),
// how to wait for one to exit, and how to kill every process that matches.
package hostproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Proc is a live process as KillMatching sees it.
type Proc struct {
	Pid int
	Sid int // session id
	// UIDs are its real, effective, saved and filesystem uids. All four
	// count: a setuid program a host user runs has the file owner's uid
	// as its effective one only, and /proc/<pid> of such a process is
	// root's, so the owner of /proc/<pid> proves nothing.
	UIDs [4]uint32
}

// HasUID reports whether any of p's uids is one in.
func (p Proc) HasUID(in func(uint32) bool) bool {
	for _, u := range p.UIDs {
		if in(u) {
			return true
		}
	}
	return false
}

// uidsOf reads the Uid line of /proc/<pid>/status.
func uidsOf(pid int) ([4]uint32, error) {
	p, _, err := status(pid)
	return p.UIDs, err
}

// status reads /proc/<pid>/status, one read for all KillMatching needs:
// the process's uids and session (NSsid, as this process's pid namespace
// sees it) and whether it is a zombie.
func status(pid int) (p Proc, zombie bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return p, false, err
	}
	p.Pid = pid
	hasUID := false
	for line := range strings.Lines(string(b)) {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "State":
			zombie = strings.HasPrefix(strings.TrimSpace(rest), "Z")
		case "NSsid":
			if f := strings.Fields(rest); len(f) > 0 {
				p.Sid, _ = strconv.Atoi(f[0])
			}
		case "Uid":
			f := strings.Fields(rest)
			if len(f) != 4 {
				return p, zombie, fmt.Errorf("/proc/%d/status has a malformed Uid line", pid)
			}
			for i := range f {
				u, err := strconv.ParseUint(f[i], 10, 32)
				if err != nil {
					return p, zombie, err
				}
				p.UIDs[i] = uint32(u)
			}
			hasUID = true
		}
	}
	if !hasUID {
		return p, zombie, fmt.Errorf("/proc/%d/status has no Uid line", pid)
	}
	return p, zombie, nil
}

// StartTime is field 22 of /proc/<pid>/stat: the process's start time in
// clock ticks since boot, which tells a live pid from a reused one.
func StartTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

// statFields returns the fields of /proc/<pid>/stat after the command
// name, so fields[0] is field 3 (state).
func statFields(pid int) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return f, nil
}

// Alive reports whether pid runs, is not a zombie and, when startTime is
// not zero, is the process that started then.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	f, err := statFields(pid)
	if err != nil || string(f[0]) == "Z" {
		return false
	}
	t, err := strconv.ParseUint(string(f[19]), 10, 64)
	return err == nil && (startTime == 0 || t == startTime)
}

// KillMatching sends SIGKILL to every live process match selects (never
// this one) and returns how many it found. It reads one file per host
// process: callers that run often batch what they look for into one walk.
func KillMatching(match func(Proc) bool) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		p, zombie, err := status(pid)
		if err != nil || zombie {
			continue // gone, or dead already
		}
		if match(p) {
			n++
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return n, nil
}

// PidNS is the inode of pid's pid namespace (0 when it is gone): every
// process of a sandbox with its own pid namespace shares it.
func PidNS(pid int) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st); err != nil {
		return 0
	}
	return st.Ino
}
