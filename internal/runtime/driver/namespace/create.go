package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
	"github.com/hutchdev/hutch/internal/runtime/host/cgroups"
)

// cloneFlags are the namespaces every agent starts in. The cgroup
// namespace comes later, from the agent's fork thread, once it is in the
// sandbox's cgroup.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// dirFD is the sandbox's directory's descriptor in its agent, after the
// agent binary's (nsinit.Config.DirFD).
const dirFD = launch.ExecFD + 1

// spawned is a sandbox whose agent started in its namespaces and waits
// for its envelope.
type spawned struct {
	st    state
	agent *launch.Agent
}

func (sp *spawned) close() { sp.agent.Close() }

// Create makes the sandbox, taking a warm one from the pool when one is
// ready, and returns once its agent serves.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (driver.Handle, error) {
	var h driver.Handle
	var workdir string
	var err error
	if err := d.checkVolumes(spec); err != nil {
		return h, err
	}
	if spec.Image != nil {
		if err := d.checkImage(spec.Image); err != nil {
			return h, err
		}
		if spec.Image.Host {
			workdir, err = d.resolveCwd(spec.Cwd)
		} else {
			workdir, err = resolveImageCwd(spec.Cwd, spec.Image)
		}
	} else {
		if spec.Template != "" && spec.Template != "host" {
			return h, errdefs.Invalid("invalid_template", "the namespace driver has the %q template", "host")
		}
		workdir, err = d.resolveCwd(spec.Cwd)
	}
	if err != nil {
		return h, err
	}
	dir := d.sandboxDir(spec.SandboxID)
	if _, err := os.Lstat(dir); err == nil {
		return h, errdefs.Conflict("sandbox_exists", "sandbox %s already has a directory", spec.SandboxID)
	}
	var st state
	if sp, ok := d.pool.Take(); ok {
		if st, err = d.bringUp(ctx, spec, dir, workdir, sp); err != nil {
			// bringUp tore it down; what it returns names a dead agent. A
			// teardown that could not finish (a host too busy to kill its
			// processes in time) leaves the directory, which the orphan
			// sweep removes; the sandbox's id cannot start cold over it.
			if _, lerr := os.Lstat(dir); lerr == nil {
				return h, err
			}
			d.log.Warn("warm sandbox failed; starting a cold one", logattr.Sandbox(spec.SandboxID), "err", err)
			st = state{}
		}
	}
	if st.Pid == 0 {
		if err := os.Mkdir(dir, 0o711); err != nil {
			return h, fmt.Errorf("create sandbox directory: %w", err)
		}
		sp, err := d.newSandbox(dir)
		if err != nil {
			return h, err
		}
		if st, err = d.bringUp(ctx, spec, dir, workdir, sp); err != nil {
			return h, err
		}
	}
	raw, err := json.Marshal(st)
	if err != nil {
		d.teardown(context.WithoutCancel(ctx), st)
		return h, err
	}
	return driver.Handle{
		Version: driver.HandleVersion,
		Driver:  Name,
		Agent:   driver.Endpoint{Network: "unix", Address: filepath.Join(dir, agentSocket), Info: d.agentInfo},
		Token:   spec.Token,
		Workdir: workdir,
		State:   raw,
	}, nil
}

// newSandbox prepares dir and starts an agent in fresh namespaces that
// waits for its envelope: everything of a sandbox that does not depend on
// its spec. On error nothing of it is left.
func (d *Driver) newSandbox(dir string) (_ *spawned, retErr error) {
	st := state{Dir: dir, Template: d.tmpl.Dir, Mapped: d.mapped}
	defer func() {
		if retErr != nil {
			d.teardown(context.Background(), st)
		}
	}()
	base, err := d.takeIDs(dir)
	if err != nil {
		return nil, errdefs.Unavailable("no_capacity", "%s", err.Error())
	}
	st.IDBase = base
	// Record the range before anything runs as it, so a sweep can clean up.
	if err := launch.WriteState(dir, st); err != nil {
		return nil, err
	}
	if err := d.prepareDir(st); err != nil {
		return nil, err
	}
	sp, err := d.spawn(st)
	if sp != nil {
		st = sp.st
	}
	return sp, err
}

// spawn starts hutch-agent as root of a new user namespace (mapped to the
// sandbox's host range) in new mount, pid, net, ipc and uts namespaces,
// and records its pid. The agent's ids may not look up the directories
// above the data directory (a home that is 0700, say), and need not:
// hutch opens its binary and starts it in the sandbox's directory, from
// where the template is "../.templates/…" (nsinit.Config).
func (d *Driver) spawn(st state) (*spawned, error) {
	// Its name inside, as /proc/1/cmdline shows it: not the host's path.
	cmd, done, err := launch.AgentCommand(filepath.Join(d.tmpl.Dir, agentInside), agentInside)
	if err != nil {
		return nil, err
	}
	defer done()
	cmd.Env = nsinit.Env()
	// The sandbox's directory, opened here in the host's mount namespace
	// (nsinit.Config.DirFD), for an agent that closes it before any
	// command starts.
	if d.agentInfo.Has(agentproto.FeatureDirFD) {
		dir, err := os.OpenFile(st.Dir, os.O_RDONLY|unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open the sandbox's directory: %w", err)
		}
		defer dir.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, dir)
	}
	uids, gids := d.idMaps(st)
	// Rootless, the kernel lets a user namespace map its creator's gid
	// only once setgroups is denied in it.
	spec := nsinit.SpawnSpec{Cloneflags: cloneFlags, UIDs: uids, GIDs: gids,
		Setgroups: !d.rootless, NoSetGroups: d.rootless, Files: len(cmd.ExtraFiles)}
	if d.agentInfo.Has(agentproto.FeatureSpawn) {
		return d.spawnStaged(st, cmd, spec)
	}
	cmd.SysProcAttr = spec.SysProcAttr()
	var a *launch.Agent
	if err := launch.InDir(st.Dir, func() (err error) {
		a, err = launch.Start(cmd, filepath.Join(st.Dir, "agent.log"))
		return err
	}); err != nil {
		return nil, err
	}
	return d.spawned(st, a)
}

// spawnStaged starts the agent through its first stage (nsinit.Spawn),
// which the process forks into the sandbox's namespaces instead of this
// one: a vfork of the stage in the sandbox's directory, which it can
// enter as the host's root, and the stage's fork of itself, a few MiB.
func (d *Driver) spawnStaged(st state, cmd *exec.Cmd, spec nsinit.SpawnSpec) (*spawned, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd.Args = append(cmd.Args, nsinit.SpawnArg, string(b))
	cmd.Dir = st.Dir
	a, err := launch.StartStaged(cmd, filepath.Join(st.Dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	return d.spawned(st, a)
}

// spawned records the started agent a in st's state.
func (d *Driver) spawned(st state, a *launch.Agent) (*spawned, error) {
	st.Pid, st.StartTime, st.PidNS = a.Pid, a.StartTime, hostproc.PidNS(a.Pid)
	sp := &spawned{st: st, agent: a}
	if err := launch.WriteState(st.Dir, st); err != nil {
		sp.close()
		return sp, err
	}
	return sp, nil
}

// startsFrom sets what of the envelope depends on where the sandbox's
// directory is and how spawn starts its agent: the template (or the
// image's layers), relative to the directory, and the agent's descriptor.
func (d *Driver) startsFrom(ev *envelope.Envelope, st state) error {
	ev.Socket, ev.ExecFD = agentSocket, launch.ExecFD
	if d.agentInfo.Has(agentproto.FeatureDirFD) {
		ev.Namespace.DirFD = dirFD
	}
	binds, err := d.binds(st)
	if err != nil {
		return fmt.Errorf("the sandbox's volumes: %w", err)
	}
	ev.Namespace.Binds = binds
	if st.Image != nil {
		lowers, err := d.imageLowers(st)
		if err != nil {
			return fmt.Errorf("the sandbox's layers: %w", err)
		}
		ev.Namespace.Lower, ev.Namespace.Lowers = "", lowers
		return nil
	}
	tmpl := st.Template
	if tmpl == "" {
		tmpl = d.tmpl.Dir
	}
	lower, err := filepath.Rel(st.Dir, tmpl)
	if err != nil {
		return fmt.Errorf("the sandbox's template: %w", err)
	}
	ev.Namespace.Lower = lower
	return nil
}

// bringUp turns a spawned sandbox into the one spec asks for: it moves a
// warm sandbox's directory into place, writes the sandbox's own files,
// makes its cgroups and puts the agent in them, then hands the agent its
// envelope and waits until it serves. On error nothing of it is left.
func (d *Driver) bringUp(ctx context.Context, spec driver.Spec, dir, workdir string, sp *spawned) (_ state, retErr error) {
	defer func() {
		if retErr != nil {
			sp.close()
			if err := d.teardown(context.WithoutCancel(ctx), sp.st); err != nil {
				d.log.Warn("a sandbox that failed to start is left for the orphan sweep", logattr.Sandbox(spec.SandboxID), "err", err)
			}
		}
	}()
	if sp.st.Dir != dir {
		if err := os.Rename(sp.st.Dir, dir); err != nil {
			return sp.st, fmt.Errorf("move warm sandbox into place: %w", err)
		}
		sp.st.Dir = dir
		d.claimIDs(sp.st.IDBase, dir)
	}
	acct := accountFor(spec.Root || d.rootless)
	sp.st.Root = spec.Root
	sp.st.Limits = spec.Limits
	for _, v := range spec.Volumes {
		sp.st.Volumes = append(sp.st.Volumes, volumeState{Dir: v.Dir, Path: v.Path, ReadOnly: v.ReadOnly})
	}
	if err := d.prepareVolumes(sp.st); err != nil {
		return sp.st, err
	}

	if spec.Snapshot != "" {
		if err := d.canSnapshot(sp.st); err != nil {
			return sp.st, err
		}
		if err := d.replaceLayer(ctx, sp.st, spec.Snapshot, spec.TakeSnapshot); err != nil {
			return sp.st, err
		}
	}
	if err := d.limitDisk(sp.st); err != nil {
		return sp.st, err
	}
	if img := spec.Image; img != nil {
		if !img.Host {
			acct = imageAccount(img, spec.Root, d.rootless)
			sp.st.Template = d.base.Dir
		}
		sp.st.Image = &imageState{Layers: img.Layers, Shared: img.Shared, Host: img.Host, UID: acct.id, GID: acct.gid}
		if err := launch.WriteState(dir, sp.st); err != nil {
			return sp.st, err
		}
		if err := d.prepareImage(sp.st); err != nil {
			return sp.st, err
		}
	}
	switch {
	case spec.Snapshot != "":
	case spec.Image != nil:
		// An image keeps its accounts, and so does a snapshot's layer
		// over the host template (its sandbox's were written into it).
		if err := d.personalizeImage(sp.st, spec.SandboxID, acct, workdir); err != nil {
			return sp.st, err
		}
	default:
		if err := d.personalize(sp.st, spec.SandboxID, acct, workdir); err != nil {
			return sp.st, err
		}
	}
	if spec.Snapshot != "" {
		if err := d.personalizeCopy(sp.st, spec.SandboxID, acct, workdir); err != nil {
			return sp.st, err
		}
	}
	if err := d.volumeMountPoints(sp.st); err != nil {
		return sp.st, err
	}
	if err := d.attachMounts(sp.st); err != nil {
		return sp.st, err
	}
	var join *nsinit.CgroupJoin
	if d.cg != nil {
		sp.st.Cgroup, sp.st.Limits = spec.SandboxID, spec.Limits
		if err := launch.WriteState(dir, sp.st); err != nil {
			return sp.st, err
		}
		g, err := d.cg.Create(spec.SandboxID, cgroupLimits(spec.Limits), cgroups.Owner{UID: d.hostUID(sp.st, rootID), GID: d.hostGID(sp.st, rootID)})
		if err != nil {
			return sp.st, fmt.Errorf("create the sandbox's cgroups: %w", err)
		}
		if err := g.Place(sp.st.Pid); err != nil {
			return sp.st, fmt.Errorf("put the agent in its cgroup: %w", err)
		}
		j := g.Join()
		join = &j
	}
	if err := launch.WriteState(dir, sp.st); err != nil {
		return sp.st, err
	}
	ev := d.envelope(spec, workdir, acct, join)
	if err := d.startsFrom(ev, sp.st); err != nil {
		return sp.st, err
	}
	if err := launch.WriteEnvelope(dir, ev); err != nil {
		return sp.st, err
	}
	if err := sp.agent.Handshake(ctx, ev); err != nil {
		return sp.st, err
	}
	return sp.st, nil
}

// Start starts the agent of a stopped sandbox again, in new namespaces over
// the same upper layer and cgroups, with the envelope it was created with.
func (d *Driver) Start(ctx context.Context, h driver.Handle) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	// One start at a time per sandbox: a second one finds the agent of
	// the first alive and is refused.
	unlock := d.starts.Lock(st.Dir)
	defer unlock()
	// The directory's copy of the state names the agent a concurrent Start
	// may just have started; the handle names the one before it.
	if cur, err := readState(st.Dir); err == nil && cur.Pid != 0 {
		st.Pid, st.StartTime = cur.Pid, cur.StartTime
	}
	if d.alive(st) {
		return h, errdefs.Conflict("sandbox_running", "the sandbox's agent is already running")
	}
	ev, err := launch.ReadEnvelope(st.Dir)
	if err != nil {
		return h, err
	}
	if ev.Namespace == nil {
		return h, errors.New("the sandbox's envelope has no namespace part")
	}
	// A sandbox made by an earlier build kept its socket as a host path
	// and its template as a link.
	if err := d.startsFrom(ev, st); err != nil {
		return h, err
	}
	sp, err := d.spawn(st)
	if err == nil {
		st = sp.st
		if err = d.attachMounts(st); err != nil {
			sp.close()
		} else {
			err = d.replace(ctx, st, ev, sp)
		}
	}
	if err != nil {
		d.killAll(context.WithoutCancel(ctx), st)
		return h, err
	}
	if h.State, err = json.Marshal(st); err != nil {
		return h, err
	}
	return h, nil
}

// replace puts a restarted agent in the sandbox's cgroups (made again if
// they are gone) and hands it its envelope.
func (d *Driver) replace(ctx context.Context, st state, ev *envelope.Envelope, sp *spawned) error {
	if d.cg != nil && st.Cgroup != "" {
		owner := cgroups.Owner{UID: d.hostUID(st, rootID), GID: d.hostGID(st, rootID)}
		g, err := d.cg.Create(st.Cgroup, cgroupLimits(st.Limits), owner)
		if errors.Is(err, cgroups.ErrExists) {
			g, err = d.cg.Open(st.Cgroup)
		}
		if err != nil {
			sp.close()
			return fmt.Errorf("create the sandbox's cgroups: %w", err)
		}
		if err := g.Place(st.Pid); err != nil {
			sp.close()
			return fmt.Errorf("put the agent in its cgroup: %w", err)
		}
	}
	return sp.agent.Handshake(ctx, ev)
}
