package hostproc

import (
	"os"
	"strconv"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 ticks
// a second on every architecture Linux runs Go on.
const userHZ = 100

// Usage is what a set of host processes uses, as /proc tells it.
type Usage struct {
	// CPUNS is their user and system time and that of the children they
	// waited for, in nanoseconds (counted in ticks of 10 ms).
	CPUNS uint64
	// RSSBytes is their resident memory; pages they share count once
	// per process.
	RSSBytes int64
	// Tasks are their threads.
	Tasks int
}

// Measure adds up what every live process match selects uses, except the
// process root, of which only the time of the children it waited for
// counts: a sandbox's agent, say, that reaps its commands. Zombies count
// for their time alone, until their parent takes it over.
func Measure(match func(Proc) bool, root int) (Usage, error) {
	var u Usage
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return u, err
	}
	page := int64(os.Getpagesize())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(pid)
		if err != nil || len(f) < 22 {
			continue // gone
		}
		sid, _ := strconv.Atoi(string(f[3]))
		uids, err := uidsOf(pid)
		if err != nil || !match(Proc{Pid: pid, Sid: sid, UIDs: uids}) {
			continue
		}
		// Fields 14 to 17: utime, stime, cutime, cstime.
		var ticks [4]uint64
		for i := range ticks {
			ticks[i], _ = strconv.ParseUint(string(f[11+i]), 10, 64)
		}
		if pid == root {
			u.CPUNS += (ticks[2] + ticks[3]) * (1e9 / userHZ)
			continue
		}
		u.CPUNS += (ticks[0] + ticks[1] + ticks[2] + ticks[3]) * (1e9 / userHZ)
		if string(f[0]) == "Z" {
			continue
		}
		threads, _ := strconv.Atoi(string(f[17])) // field 20
		rss, _ := strconv.ParseInt(string(f[21]), 10, 64)
		u.Tasks += threads
		u.RSSBytes += rss * page
	}
	return u, nil
}
