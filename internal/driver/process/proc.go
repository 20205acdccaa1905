package process

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// procInfo is what killAll needs of a process.
type procInfo struct {
	pid int
	sid int
	uid uint32
}

// procStartTime is field 22 of /proc/<pid>/stat: the process's start time
// in clock ticks since boot, which tells a live pid from a reused one.
func procStartTime(pid int) (uint64, error) {
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

// alive reports whether the agent recorded in st still runs (and is not a
// zombie or a reused pid).
func alive(st state) bool {
	if st.Pid <= 0 {
		return false
	}
	f, err := statFields(st.Pid)
	if err != nil || string(f[0]) == "Z" {
		return false
	}
	t, err := strconv.ParseUint(string(f[19]), 10, 64)
	return err == nil && (st.StartTime == 0 || t == st.StartTime)
}

// killMatching sends SIGKILL to every live process match selects and
// returns how many it found.
func killMatching(match func(procInfo) bool) (int, error) {
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
		f, err := statFields(pid)
		if err != nil || string(f[0]) == "Z" {
			continue
		}
		sid, _ := strconv.Atoi(string(f[3]))
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+e.Name(), &st); err != nil {
			continue
		}
		p := procInfo{pid: pid, sid: sid, uid: st.Uid}
		if match(p) {
			n++
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return n, nil
}
