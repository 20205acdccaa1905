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

	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// A volume is a directory of the volume service's, kept with the
// sandbox's own ids on disk as a writable layer is. As root it is
// id-mapped (read-only when asked) at vol/<i> of the sandbox's directory
// before the agent builds its root, and the agent binds it from there to
// its path inside (nsinit.Bind), making the mount point in the sandbox's
// files. Rootless the agent binds the directory itself.
const volDir = "vol"

// volumeState is a mounted volume, kept to mount it again on Start.
type volumeState struct {
	Dir      string `json:"dir"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// checkVolumes refuses mount points the sandbox's root cannot have: its
// own mounts and, from the host template, the host's read-only system
// directories.
func (d *Driver) checkVolumes(spec driver.Spec) error {
	if len(spec.Volumes) == 0 {
		return nil
	}
	if !d.caps.Volumes {
		return errdefs.New(errdefs.ErrUnsupported, "volumes_unsupported", "the namespace driver here mounts no volumes: as root it needs id-mapped mounts (%v)", d.idmapErr)
	}
	fixed := []string{"/proc", "/dev", "/tmp", sealedDir}
	if spec.Image == nil || spec.Image.Host {
		fixed = append(fixed, d.tmpl.ReadOnly...)
	}
	for _, v := range spec.Volumes {
		for _, m := range fixed {
			if v.Path == m || strings.HasPrefix(v.Path, m+"/") || strings.HasPrefix(m, v.Path+"/") {
				return errdefs.Invalid("invalid_volume_path", "a volume cannot be mounted at %s: it meets %s, which the sandbox's root mounts itself", v.Path, m)
			}
		}
	}
	return nil
}

// prepareVolumes makes the mount points of a sandbox's id-mapped volumes.
func (d *Driver) prepareVolumes(st state) error {
	if len(st.Volumes) == 0 || !st.Mapped {
		return nil
	}
	for i := range st.Volumes {
		if err := os.MkdirAll(filepath.Join(st.Dir, volDir, strconv.Itoa(i)), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("prepare the sandbox's volumes: %w", err)
		}
	}
	return nil
}

// binds are the agent's side of the sandbox's volumes.
func (d *Driver) binds(st state) ([]nsinit.Bind, error) {
	out := make([]nsinit.Bind, 0, len(st.Volumes))
	for i, v := range st.Volumes {
		src := path.Join(volDir, strconv.Itoa(i))
		if !st.Mapped {
			rel, err := filepath.Rel(st.Dir, v.Dir)
			if err != nil {
				return nil, err
			}
			src = rel
		}
		out = append(out, nsinit.Bind{Source: src, Target: v.Path, ReadOnly: v.ReadOnly})
	}
	return out, nil
}

// volumeMountPoints makes, in the sandbox's writable layer, the
// directories its volumes are mounted on that the layer lacks, as its
// root's (the template's directories are the host's root's, which the
// sandbox's root may not write in). The layer may be a copy of another
// sandbox's: every path is resolved inside it.
func (d *Driver) volumeMountPoints(st state) error {
	if len(st.Volumes) == 0 {
		return nil
	}
	root, err := os.OpenRoot(filepath.Join(st.Dir, upperFS))
	if err != nil {
		return fmt.Errorf("the sandbox's files: %w", err)
	}
	defer root.Close()
	for _, v := range st.Volumes {
		p := ""
		for _, c := range strings.Split(strings.TrimPrefix(v.Path, "/"), "/") {
			p = path.Join(p, c)
			if _, err := root.Lstat(p); err == nil {
				continue
			}
			if err := root.Mkdir(p, 0o755); err != nil {
				return fmt.Errorf("the mount point of the volume at %s: %w", v.Path, err)
			}
			if err := root.Lchown(p, d.diskUID(st, rootID), d.diskGID(st, rootID)); err != nil {
				return fmt.Errorf("the mount point of the volume at %s: %w", v.Path, err)
			}
		}
	}
	return nil
}
