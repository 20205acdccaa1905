package namespace

import (
	"maps"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
	"github.com/hutchdev/hutch/internal/runtime/host/cgroups"
)

// defaultTmpBytes sizes /tmp and /dev/shm of a sandbox without a memory
// limit; with one, they are as large as the limit (and charged to it).
const defaultTmpBytes = 1 << 30

// envelope is what the agent of one sandbox needs: how its root is made,
// who its commands run as, and how it confines itself before it serves;
// startsFrom adds where it listens and where its template is.
func (d *Driver) envelope(spec driver.Spec, workdir string, acct account, join *nsinit.CgroupJoin) *envelope.Envelope {
	shell, readOnly := d.tmpl.Shell, d.tmpl.ReadOnly
	if spec.Image != nil && !spec.Image.Host {
		shell, readOnly = "/bin/sh", nil
	}
	env := acct.env(spec.SandboxID, shell)
	if spec.Image != nil {
		imageEnv(env, spec.Image)
	}
	maps.Copy(env, spec.Env)
	env["HUTCH_SANDBOX_ID"] = spec.SandboxID
	tmp := int64(defaultTmpBytes)
	if spec.Limits.MemoryMB > 0 {
		tmp = int64(spec.Limits.MemoryMB) << 20
	}
	return &envelope.Envelope{
		Version:      launch.EnvelopeVersion(d.agentInfo),
		SandboxID:    spec.SandboxID,
		Token:        spec.Token,
		Root:         "/",
		Workdir:      workdir,
		Env:          env,
		MaxFileBytes: spec.MaxFileBytes,
		MaxTarBytes:  spec.MaxTarBytes,
		RunAs:        acct.runAs(),
		CommandCaps:  acct.caps(),
		Namespace: &nsinit.Config{
			Upper:      upperFS,
			Work:       upperWork,
			Rootfs:     rootfsDir,
			ReadOnly:   readOnly,
			Sealed:     []string{sealedDir},
			Hostname:   spec.SandboxID,
			TTYGID:     d.ttyGID(),
			Egress:     filepath.Join(runDir, egressSock),
			EgressPass: d.agentInfo.Has(agentproto.FeatureEgressFD),
			UserLimits: d.userLimits,
			TmpBytes:   tmp,
			Cgroup:     join,
		},
		Confine: &confine.Config{
			NoNewPrivs: true,
			Seccomp:    true,
			// The root is the sandbox's own and the network namespace
			// holds only lo: Landlock adds its scopes (no signals to, and
			// no abstract sockets of, processes outside the sandbox's
			// domain) on top of a root the sandbox may use whole.
			Landlock: &confine.Landlock{ReadWrite: []string{"/"}, Scope: true},
			Rlimits:  []confine.Rlimit{{Resource: "core", Cur: 0, Max: 0}},
		},
	}
}

// cgroupLimits converts the API's limits; zero stays unlimited.
func cgroupLimits(l api.Limits) cgroups.Limits {
	return cgroups.Limits{MemoryBytes: int64(l.MemoryMB) << 20, Pids: int64(l.Pids), CPU: l.CPU}
}
