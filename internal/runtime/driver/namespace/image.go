package namespace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// A sandbox from an image has, instead of the host template and binds of
// the host's system directories, an overlay of: its upper layer; hutch's
// base layer (mount points and the agent, buildImageBase); the image's
// layers. Shared layers (hutch as root) keep the image's own ids in the
// layer store, which is hutch's alone; each sandbox sees them through
// read-only id-mapped mounts made for its user namespace and attached in
// its mount namespace at lower/<i> of its directory before its agent
// builds the overlay (internal/runtime/host/idmap). Without root each image is one
// flattened tree owned by hutch's user, which is every sandbox's root.
const lowerDir = "lower"

// imageState is what the driver keeps of a sandbox's image, to attach its
// layers again on Start.
type imageState struct {
	Layers []string `json:"layers"` // host directories, bottom first
	Shared bool     `json:"shared,omitempty"`
	Host   bool     `json:"host,omitempty"` // over the host template (driver.Image.Host)
	// UID and GID are who the sandbox's commands run as.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// imageCaps says whether this host can start sandboxes from images, and
// shares their layers: as root, when the data directory's filesystem can
// id-map mounts. (Not a missing protection: the rest still holds.)
func (d *Driver) imageCaps(c *driver.Capabilities) {
	if d.base == nil {
		return
	}
	c.Images = d.rootless || d.mapped
	c.SharedLayers = d.mapped
}

// checkImage refuses an image the driver cannot start.
func (d *Driver) checkImage(img *driver.Image) error {
	switch {
	case !d.caps.Images:
		return errdefs.New(errdefs.ErrUnsupported, "images_unsupported", "the namespace driver on this host starts no sandbox from an image (GET /v1/info says why)")
	case img.Shared != d.caps.SharedLayers:
		return fmt.Errorf("the image's layers are kept for a driver that shares them=%v, this one %v", img.Shared, d.caps.SharedLayers)
	case len(img.Layers) == 0:
		return errdefs.Invalid("invalid_template", "the image has no layers")
	}
	return nil
}

// prepareImage makes the mount points of a sandbox's shared layers.
func (d *Driver) prepareImage(st state) error {
	if st.Image == nil || !st.Image.Shared {
		return nil
	}
	if err := os.Mkdir(filepath.Join(st.Dir, lowerDir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("prepare the sandbox's layers: %w", err)
	}
	for i := range st.Image.Layers {
		if err := os.Mkdir(filepath.Join(st.Dir, lowerDir, strconv.Itoa(i)), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("prepare the sandbox's layers: %w", err)
		}
	}
	return nil
}

// attachMounts gives the spawned agent of st, before it builds its root,
// its id-mapped mounts (in its mount namespace, through its user
// namespace): when st.Mapped its writable layer over itself and its
// volumes at vol/<i>, and its shared image layers at lower/<i>.
func (d *Driver) attachMounts(st state) error {
	var ps []idmap.Placement
	if st.Mapped {
		upper := filepath.Join(st.Dir, upperDir)
		ps = append(ps, idmap.Placement{Dir: upper, Target: upper, Writable: true})
		for i, v := range st.Volumes {
			ps = append(ps, idmap.Placement{Dir: v.Dir, Target: filepath.Join(st.Dir, volDir, strconv.Itoa(i)), Writable: !v.ReadOnly})
		}
	}
	if st.Image != nil && st.Image.Shared {
		for i, dir := range st.Image.Layers {
			ps = append(ps, idmap.Placement{Dir: dir, Target: filepath.Join(st.Dir, lowerDir, strconv.Itoa(i))})
		}
	}
	if err := idmap.Place(st.Pid, ps); err != nil {
		return fmt.Errorf("the sandbox's mounts: %w", err)
	}
	return nil
}

// imageLowers are the overlay's lower layers of an image sandbox, topmost
// first, relative to its directory.
func (d *Driver) imageLowers(st state) ([]string, error) {
	// hutch's base layer lies over an image; the host template under a
	// snapshot's layer.
	base, err := filepath.Rel(st.Dir, d.base.Dir)
	if st.Image.Host {
		base, err = filepath.Rel(st.Dir, st.Template)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	if !st.Image.Host {
		out = append(out, base)
	}
	for i := len(st.Image.Layers) - 1; i >= 0; i-- {
		p := filepath.Join(lowerDir, strconv.Itoa(i))
		if !st.Image.Shared {
			if p, err = filepath.Rel(st.Dir, st.Image.Layers[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	if st.Image.Host {
		out = append(out, base)
	}
	return out, nil
}

// imageAccount is who an image sandbox's commands run as: root when the
// request asks for it or hutch has no other id to give, else the image's
// user.
func imageAccount(img *driver.Image, root, rootless bool) account {
	if root || rootless || img.User.UID == rootID {
		home := img.User.Home
		if img.User.UID != rootID || home == "" {
			home = "/root"
		}
		return account{name: "root", id: rootID, gid: rootID, home: home}
	}
	return account{name: img.User.Name, id: img.User.UID, gid: img.User.GID, home: img.User.Home}
}

// imageEnv lays the image's environment over the base one.
func imageEnv(base map[string]string, img *driver.Image) {
	for _, kv := range img.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			base[k] = v
		}
	}
}

// resolveImageCwd places the working directory of an image sandbox: the
// request's, else the image's, else /; relative ones are under the
// image's (or /).
func resolveImageCwd(cwd string, img *driver.Image) (string, error) {
	dir := img.WorkingDir
	if dir == "" || !path.IsAbs(dir) {
		dir = "/"
	}
	if cwd == "" {
		return path.Clean(dir), nil
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
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	for _, m := range []string{"/proc", "/dev", "/tmp", sealedDir} {
		if p == m || strings.HasPrefix(p, m+"/") {
			return "", errdefs.Invalid("invalid_cwd", "cwd %q is under %s, which is not part of the sandbox's writable root", cwd, m)
		}
	}
	return p, nil
}

// personalizeImage writes an image sandbox's own files into its fresh
// upper layer: its name and hosts (the image keeps its accounts), and the
// working directory where no layer has it.
func (d *Driver) personalizeImage(st state, hostname string, acct account, workdir string) error {
	upper := filepath.Join(st.Dir, upperFS)
	if err := d.mkdirOwned(st, filepath.Join(upper, "etc"), 0o755, rootID, rootID); err != nil {
		return err
	}
	etc := sandboxEtc(hostname, "/bin/sh")
	if err := d.writeEtc(st, map[string]string{"hostname": etc["hostname"], "hosts": etc["hosts"], "resolv.conf": etc["resolv.conf"]}); err != nil {
		return err
	}
	made := parentsOf(workdir)
	for i := range made {
		// A directory the image has keeps its owner and mode, as a copy-up
		// would; one it lacks is the user's.
		mode, uid, gid := os.FileMode(0o755), acct.id, acct.gid
		// Looked up as the sandbox would (layer.Stat): a link in the
		// image never leads to the host's files.
		fi, err := layer.Stat(st.Image.Layers, made[i])
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read the image's %s: %w", made[i], err)
		}
		if err == nil {
			if !fi.IsDir() {
				return errdefs.Invalid("invalid_cwd", "cwd %q: %s is not a directory in the image", workdir, made[i])
			}
			// The sticky and setgid bits too: os.FileMode's, which
			// os.Chmod takes, not the raw 0o1000 and 0o2000.
			mode = fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid)
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok && st.Image.Shared {
				uid, gid = sys.Uid, sys.Gid
			}
		}
		if err := d.mkdirOwned(st, filepath.Join(upper, made[i]), mode, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
