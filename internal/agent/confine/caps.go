package confine

import (
	"fmt"
	"slices"
	"sort"
)

// capNumbers maps the capability names Caps may keep to their numbers
// (include/uapi/linux/capability.h). They are written out rather than taken
// from x/sys so this file builds on every platform.
var capNumbers = map[string]int{
	"chown": 0, "dac_override": 1, "dac_read_search": 2, "fowner": 3, "fsetid": 4,
	"kill": 5, "setgid": 6, "setuid": 7, "setpcap": 8, "linux_immutable": 9,
	"net_bind_service": 10, "net_broadcast": 11, "net_admin": 12, "net_raw": 13,
	"ipc_lock": 14, "ipc_owner": 15, "sys_module": 16, "sys_rawio": 17, "sys_chroot": 18,
	"sys_ptrace": 19, "sys_pacct": 20, "sys_admin": 21, "sys_boot": 22, "sys_nice": 23,
	"sys_resource": 24, "sys_time": 25, "sys_tty_config": 26, "mknod": 27, "lease": 28,
	"audit_write": 29, "audit_control": 30, "setfcap": 31, "mac_override": 32,
	"mac_admin": 33, "syslog": 34, "wake_alarm": 35, "block_suspend": 36,
	"audit_read": 37, "perfmon": 38, "bpf": 39, "checkpoint_restore": 40,
}

// Caps narrows a thread's capability bounding set (see DropBounding):
// every capability not in Keep is dropped, so no process that thread
// starts afterwards can gain it, whatever its uid (root inside a user
// namespace included) or its file capabilities.
type Caps struct {
	Keep []string `json:"keep,omitempty"` // names as in capabilities(7), lower case, without "cap_"
}

// Validate checks that Keep names known capabilities.
func (c *Caps) Validate() error {
	for _, n := range c.Keep {
		if _, ok := capNumbers[n]; !ok {
			names := make([]string, 0, len(capNumbers))
			for k := range capNumbers {
				names = append(names, k)
			}
			sort.Strings(names)
			return fmt.Errorf("confine: unknown capability %q (known: %v)", n, names)
		}
	}
	return nil
}

// dropped lists the capability numbers up to last that Keep does not name.
func (c *Caps) dropped(last int) []int {
	var out []int
	for n := 0; n <= last; n++ {
		keep := false
		for _, k := range c.Keep {
			if capNumbers[k] == n {
				keep = true
			}
		}
		if !keep {
			out = append(out, n)
		}
	}
	return slices.Clip(out)
}
