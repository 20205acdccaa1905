package namespace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
)

// templateVersion changes whenever the template's layout does, so a new
// build never reuses an old directory.
const templateVersion = "2"

// agentInside is where the agent binary is in every sandbox, under
// sealedDir, which is bound read-only.
const (
	sealedDir   = "/.hutch"
	agentInside = sealedDir + "/bin/hutch-agent"
)

// systemDirs are the host directories a sandbox sees read-only: bound
// where they are real directories, mirrored as symlinks where the host's
// /usr is merged (Debian's /bin → usr/bin).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are what a sandbox gets of the host's /etc: enough to run
// programs (the dynamic linker's cache, certificates, time zone, shell
// profiles), never the whole of it, and no accounts or secrets. passwd,
// group, hosts, hostname and resolv.conf are the sandbox's own, written
// per sandbox. Only what every host user may read is copied.
var etcFiles = []string{
	"nsswitch.conf", "host.conf", "gai.conf", "protocols", "services",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives",
	"localtime", "timezone", "os-release", "debian_version",
	"profile", "profile.d", "bash.bashrc", "inputrc", "environment",
	"mime.types", "magic", "locale.alias", "terminfo", "shells", "login.defs",
}

// emptyDirs are the template's directories: mount points and the usual
// top of a Linux tree. Every one must be readable by others: overlayfs
// reads a lower directory with the credentials of the sandbox's root,
// which does not own the template. (/root is 0700 in each sandbox's upper
// layer, which is what its users see.)
var emptyDirs = map[string]os.FileMode{
	"proc": 0o555, "dev": 0o755, "tmp": 0o777 | os.ModeSticky, "etc": 0o755,
	"home": 0o755, "root": 0o755, "workspace": 0o755, "var": 0o755, "var/tmp": 0o777 | os.ModeSticky,
	"run": 0o755, "opt": 0o755, "srv": 0o755, "mnt": 0o755, ".hutch": 0o755, ".hutch/bin": 0o755,
}

// baseDirs are the directories of the layer over an image: where a
// sandbox's root gets its mounts.
var baseDirs = map[string]os.FileMode{
	"proc": 0o555, "dev": 0o755, "tmp": 0o777 | os.ModeSticky, ".hutch": 0o755, ".hutch/bin": 0o755,
}

// template is the read-only lower layer every sandbox's root is an
// overlay of: the host template, built from the host by hutch itself.
type template struct {
	Dir      string   // the built directory
	ReadOnly []string // system directories to bind read-only
	Shell    string   // login shell of the sandbox's users
}

// buildTemplate builds the host template under base, named by the hash
// of everything in it, and reuses a directory of that name when it is
// already there (sandboxes still running keep the directory they were
// made from).
func buildTemplate(base, agentPath string, log *slog.Logger) (*template, error) {
	t := &template{Shell: "/bin/sh"}
	if _, err := os.Stat("/bin/bash"); err == nil {
		t.Shell = "/bin/bash"
	}
	h := sha256.New()
	io.WriteString(h, "version "+templateVersion+"\n")
	var links [][2]string
	for _, p := range systemDirs {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("template: %w", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("template: %w", err)
			}
			links = append(links, [2]string{p[1:], target})
			fmt.Fprintf(h, "link %s %s\n", p, target)
		case fi.IsDir():
			t.ReadOnly = append(t.ReadOnly, p)
			fmt.Fprintf(h, "bind %s\n", p)
		}
	}
	if len(t.ReadOnly) == 0 || t.ReadOnly[0] != "/usr" {
		return nil, errors.New("template: the host has no /usr directory")
	}
	if err := hashTree(h, "/etc", etcFiles); err != nil {
		return nil, err
	}
	if err := t.place(base, "host", h, agentPath, links, log); err != nil {
		return nil, err
	}
	return t, nil
}

// buildImageBase builds the small layer hutch lays over every image: the
// mount points of a sandbox's root and the agent, nothing of the host's.
func buildImageBase(base, agentPath string, log *slog.Logger) (*template, error) {
	t := &template{Shell: "/bin/sh"}
	h := sha256.New()
	io.WriteString(h, "version "+templateVersion+"\nimage base\n")
	if err := t.place(base, "image", h, agentPath, nil, log); err != nil {
		return nil, err
	}
	return t, nil
}

// place names t by the hash h of what it holds (the agent binary added)
// and builds it under base, or reuses a directory of that name when it is
// already there (sandboxes still running keep the directory they were made
// from).
func (t *template) place(base, kind string, h hash.Hash, agentPath string, links [][2]string, log *slog.Logger) error {
	if err := hashFile(h, agentPath); err != nil {
		return err
	}
	t.Dir = filepath.Join(base, kind+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(t.Dir); err == nil {
		return nil
	}
	// Entered, never listed, by each sandbox's root on its way to its
	// template (see Driver.makeDir).
	if err := launch.EnsureDir(base, 0o711, log); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	tmp := filepath.Join(base, ".build-"+ids.New())
	if err := t.fill(tmp, links, agentPath, kind == "host"); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, t.Dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(t.Dir); serr == nil {
			return nil // another server built it first
		}
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// fill writes the template's tree into dir: the usual top of a Linux tree
// and the host's /etc files for the host template, only the mount points
// of a sandbox's root (baseDirs) for an image's base.
func (t *template) fill(dir string, links [][2]string, agentPath string, host bool) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	dirs := baseDirs
	if host {
		dirs = emptyDirs
	}
	for name, mode := range dirs {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("template: %w", err)
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("template: %w", err)
		}
	}
	for _, p := range t.ReadOnly {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return fmt.Errorf("template: %w", err)
		}
	}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(dir, l[0])); err != nil {
			return fmt.Errorf("template: %w", err)
		}
	}
	for _, name := range etcFiles {
		if !host {
			break
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, "etc", name)), 0o755); err != nil {
			return fmt.Errorf("template: %w", err)
		}
		if err := copyTree(filepath.Join("/etc", name), filepath.Join(dir, "etc", name)); err != nil {
			return err
		}
	}
	return copyFile(agentPath, filepath.Join(dir, agentInside), 0o755)
}

// hashTree hashes the names, modes, link targets and contents of each of
// names under root (missing ones are skipped, as fill skips them).
func hashTree(h hash.Hash, root string, names []string) error {
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(root, name), func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if private(fi) {
				return skip(fi)
			}
			fmt.Fprintf(h, "%s %v\n", p, fi.Mode())
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				io.WriteString(h, target+"\n")
			case fi.Mode().IsRegular():
				return hashFile(h, p)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("template: %w", err)
		}
	}
	return nil
}

func hashFile(h hash.Hash, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// copyTree copies src to dst: directories recursively, symlinks as links,
// regular files with their mode; nothing else, and nothing that others may
// not read (a private key kept beside certificates). A missing src is
// skipped.
func copyTree(src, dst string) error {
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, strings.TrimPrefix(p, src))
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if private(fi) {
			return skip(fi)
		}
		switch {
		case fi.IsDir():
			return os.MkdirAll(to, fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case fi.Mode().IsRegular():
			return copyFile(p, to, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("template: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return os.Chmod(dst, mode)
}

// private reports whether others may not read fi: such files are never
// copied into a template.
func private(fi fs.FileInfo) bool {
	return fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o004 == 0
}

// skip is what a WalkDir function returns to pass over fi.
func skip(fi fs.FileInfo) error {
	if fi.IsDir() {
		return filepath.SkipDir
	}
	return nil
}
