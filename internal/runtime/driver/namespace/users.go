package namespace

import (
	"maps"
	"strconv"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// The sandbox's own users, as the sandbox numbers them; the host sees
// them as IDBase + the same number.
const (
	rootID = 0
	userID = 1000
	ttyGID = 5
)

// rootCaps are the capabilities root inside a sandbox keeps (Spec.Root):
// enough to own files, change users and bind low ports, never to mount,
// trace, load modules or administer the kernel. An unprivileged user
// keeps none.
var rootCaps = []string{"chown", "dac_override", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap", "net_bind_service", "net_raw"}

// account is who a sandbox's commands run as.
type account struct {
	name    string
	id, gid uint32
	home    string
}

// ttyGID is the group of the sandbox's terminals: tty, where it exists.
func (d *Driver) ttyGID() uint32 {
	if d.rootless {
		return rootID
	}
	return ttyGID
}

func accountFor(root bool) account {
	if root {
		return account{name: "root", id: rootID, gid: rootID, home: "/root"}
	}
	return account{name: "user", id: userID, gid: userID, home: "/home/user"}
}

// accountOf is who the commands of the sandbox st run as.
func (d *Driver) accountOf(st state) account {
	if st.Image != nil {
		return account{id: st.Image.UID, gid: st.Image.GID}
	}
	return accountFor(st.Root || d.rootless)
}

func (a account) runAs() *envelope.RunAs { return &envelope.RunAs{UID: a.id, GID: a.gid} }

func (a account) caps() *confine.Caps {
	if a.id == rootID {
		return &confine.Caps{Keep: rootCaps}
	}
	return &confine.Caps{}
}

// env is every command's base environment; the caller's env is laid over
// it.
func (a account) env(id, shell string) map[string]string {
	env := map[string]string{
		"HOME":             a.home,
		"USER":             a.name,
		"LOGNAME":          a.name,
		"SHELL":            shell,
		"PATH":             "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG":             "C.UTF-8",
		"TMPDIR":           "/tmp",
		"HOSTNAME":         id,
		"HUTCH_SANDBOX_ID": id,
	}
	// Everything leaves through the agent's forwarder to the control
	// plane's egress proxy: the sandbox has no other way out.
	maps.Copy(env, driver.ProxyEnv("http://"+agentproto.EgressAddr))
	return env
}

// sandboxEtc is the sandbox's own /etc files, written into its upper layer
// (so root inside may change them): its accounts, its name and its hosts.
func sandboxEtc(hostname, shell string) map[string]string {
	uid := strconv.Itoa(userID)
	return map[string]string{
		"passwd": "root:x:0:0:root:/root:" + shell + "\n" +
			"user:x:" + uid + ":" + uid + ":user:/home/user:" + shell + "\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group": "root:x:0:\ntty:x:" + strconv.Itoa(ttyGID) + ":\nusers:x:100:user\nuser:x:" + uid + ":\n" +
			"hutch-app:x:" + strconv.Itoa(envelope.AppGID) + ":\nnogroup:x:65534:\n",
		"hostname":    hostname + "\n",
		"hosts":       "127.0.0.1\tlocalhost\n127.0.1.1\t" + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"resolv.conf": "# This sandbox has no network of its own; it reaches out through hutch's egress proxy.\n",
	}
}
