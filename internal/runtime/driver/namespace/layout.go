package namespace

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// A sandbox's directory holds, beside state.json, envelope.json and
// agent.log: its writable layer (upper/, the overlay's upper directory
// fs/ and its work directory work/), its root's mount point and run/ for
// the agent's socket (never visible inside). The overlay is mounted with
// these relative names so that /proc/mounts inside names no host path.
//
// upper/ is 0700. As root, where the host can id-map mounts (state.Mapped),
// it is owned by the host's root and keeps the sandbox's own ids on disk
// (0 for its root), id-mapped into the sandbox over itself (image.go): a
// copy of it serves any sandbox as it is (snapshots, forks). Otherwise it
// belongs to the sandbox's host ids. Either way no host user can reach
// (or run) a file the sandbox made, whatever the modes above the data
// directory.
const (
	upperDir  = "upper"
	upperFS   = upperDir + "/fs"
	upperWork = upperDir + "/work"
	rootfsDir = "rootfs"
	runDir    = "run"
	// agentSocket is where the agent listens, relative to the sandbox's
	// directory.
	agentSocket = runDir + "/agent.sock"
	// egressSock, in runDir, is where the control plane's egress proxy
	// listens for this sandbox.
	egressSock = "egress.sock"
)

// prepareDir makes what every sandbox needs before its agent starts; it
// is the same for all sandboxes, so warm ones are made ahead.
func (d *Driver) prepareDir(st state) error {
	for _, m := range []struct {
		name  string
		mode  os.FileMode
		owned bool // by the sandbox's root, else by hutch
	}{
		// run/ is searchable (not listable) by the sandbox's users: the
		// agent dials the egress socket in it as the sandbox's user.
		{upperDir, 0o700, true}, {upperFS, 0o755, true}, {upperWork, 0o700, true}, {rootfsDir, 0o755, false}, {runDir, 0o711, true},
	} {
		p := filepath.Join(st.Dir, m.name)
		mkdir := os.Mkdir
		if m.name == upperDir {
			// A btrfs subvolume on btrfs: snapshots of it are instant.
			mkdir = func(p string, _ os.FileMode) error { return d.store.Make(p) }
		}
		if err := mkdir(p, m.mode); err != nil {
			return fmt.Errorf("prepare sandbox directory: %w", err)
		}
		if err := os.Chmod(p, m.mode); err != nil {
			return fmt.Errorf("prepare sandbox directory: %w", err)
		}
		uid, gid := d.hostUID(st, rootID), d.hostGID(st, rootID)
		if m.name != runDir {
			uid, gid = d.diskUID(st, rootID), d.diskGID(st, rootID)
		}
		if m.owned {
			if err := os.Chown(p, uid, gid); err != nil {
				return fmt.Errorf("prepare sandbox directory: %w", err)
			}
		}
	}
	return nil
}

// personalize writes one sandbox's own files into its fresh upper layer:
// its /etc files, its users' home directories, /workspace and the working
// directory. Nothing of the sandbox has run yet, so no link it made can
// redirect these writes.
func (d *Driver) personalize(st state, hostname string, acct account, workdir string) error {
	upper := filepath.Join(st.Dir, upperFS)
	dirs := []struct {
		p     string
		mode  os.FileMode
		owner uint32 // inside the sandbox
	}{
		{"etc", 0o755, rootID}, {"root", 0o700, rootID}, {"home", 0o755, rootID},
		{"home/user", 0o750, userID}, {"workspace", 0o755, acct.id},
	}
	for _, m := range dirs {
		if err := d.mkdirOwned(st, filepath.Join(upper, m.p), m.mode, m.owner, m.owner); err != nil {
			return err
		}
	}
	if err := d.writeEtc(st, sandboxEtc(hostname, d.tmpl.Shell)); err != nil {
		return err
	}
	// The working directory and any parent it lacks belong to the user.
	for _, p := range parentsOf(workdir) {
		if err := d.mkdirOwned(st, filepath.Join(upper, p), 0o755, acct.id, acct.id); err != nil {
			return err
		}
	}
	return nil
}

// writeEtc writes files into the fresh upper layer's /etc (which exists),
// owned by the sandbox's root.
func (d *Driver) writeEtc(st state, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(st.Dir, upperFS, "etc", name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write the sandbox's /etc/%s: %w", name, err)
		}
		if err := os.Lchown(p, d.diskUID(st, rootID), d.diskGID(st, rootID)); err != nil {
			return fmt.Errorf("write the sandbox's /etc/%s: %w", name, err)
		}
	}
	return nil
}

// parentsOf is p and each directory above it but /, topmost first.
func parentsOf(p string) []string {
	var out []string
	for ; p != "/" && p != "."; p = path.Dir(p) {
		out = append([]string{p}, out...)
	}
	return out
}

// mkdirOwned makes p (if it is not there) with mode, owned by the
// sandbox's ids uid and gid.
func (d *Driver) mkdirOwned(st state, p string, mode os.FileMode, uid, gid uint32) error {
	err := os.Mkdir(p, mode)
	if os.IsExist(err) {
		return nil
	}
	if err == nil {
		err = os.Chmod(p, mode)
	}
	if err == nil {
		err = os.Chown(p, d.diskUID(st, uid), d.diskGID(st, gid))
	}
	if err != nil {
		return fmt.Errorf("prepare the sandbox's %s: %w", p, err)
	}
	return nil
}

// mounted are the directories whose contents the upper layer cannot give:
// mounts over the root, and the system directories bound read-only.
func (d *Driver) mounted() []string {
	return append([]string{"/proc", "/dev", "/tmp", "/.hutch"}, d.tmpl.ReadOnly...)
}

// resolveCwd places the requested working directory in the sandbox: a
// relative path is under /workspace. It must not lie under a mount, where
// it could not be made beforehand.
func (d *Driver) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return "/workspace", nil
	}
	if strings.ContainsRune(cwd, 0) {
		return "", errdefs.Invalid("invalid_path", "cwd contains a NUL byte")
	}
	for _, c := range strings.Split(cwd, "/") {
		if c == ".." {
			return "", errdefs.Invalid("invalid_path", "cwd %q has a .. component", cwd)
		}
	}
	p := cwd
	if !path.IsAbs(p) {
		p = path.Join("/workspace", p)
	}
	p = path.Clean(p)
	for _, m := range d.mounted() {
		if p == m || strings.HasPrefix(p, m+"/") {
			return "", errdefs.Invalid("invalid_cwd", "cwd %q is under %s, which is not part of the sandbox's writable root; use a directory such as /workspace", cwd, m)
		}
	}
	if p == "/" {
		return "", errdefs.Invalid("invalid_cwd", "cwd must not be / itself")
	}
	return p, nil
}
