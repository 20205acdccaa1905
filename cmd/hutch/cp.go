package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/ids"
)

// location is one side of a copy: a sandbox path (ID set) or a local
// path, where "-" is stdin or stdout.
type location struct {
	ID   string
	Path string
}

// parseLocation reads `ID:PATH` as a sandbox path when ID is a sandbox id;
// anything else is local.
func parseLocation(s string) location {
	if id, p, ok := strings.Cut(s, ":"); ok && ids.Valid(id) {
		if p == "" {
			p = "."
		}
		return location{ID: id, Path: p}
	}
	return location{Path: s}
}

// runCp is `hutch cp [-r] SRC DST`.
func runCp(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "cp", "hutch cp [-r] SRC DST   (one of them ID:PATH; - is stdin or stdout)")
	recursive := fs.Bool("r", false, "copy a directory (as tar)")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "cp takes a source and a destination")
	}
	src, dst := parseLocation(pos[0]), parseLocation(pos[1])
	if (src.ID == "") == (dst.ID == "") {
		return usagef(fs, "exactly one of source and destination must be a sandbox path ID:PATH")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	switch {
	case src.ID == "" && *recursive:
		return uploadDir(ctx, c, src.Path, dst)
	case src.ID == "":
		return uploadFile(ctx, e, c, src.Path, dst)
	case *recursive:
		return downloadDir(ctx, c, src, dst.Path)
	}
	return downloadFile(ctx, e, c, src, dst.Path)
}

func uploadFile(ctx context.Context, e *env, c *client.Client, local string, dst location) error {
	var r io.Reader = e.stdin
	mode := fs.FileMode(0o644)
	if local != "-" {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory; use cp -r", local)
		}
		r, mode = f, st.Mode().Perm()
		if strings.HasSuffix(dst.Path, "/") {
			dst.Path += filepath.Base(local)
		}
	}
	_, err := c.WriteFile(ctx, dst.ID, dst.Path, mode, r)
	return err
}

func downloadFile(ctx context.Context, e *env, c *client.Client, src location, local string) error {
	rc, err := c.ReadFile(ctx, src.ID, src.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	if local == "-" {
		_, err := io.Copy(e.stdout, rc)
		return err
	}
	if st, err := os.Stat(local); err == nil && st.IsDir() {
		local = filepath.Join(local, path.Base(src.Path))
	}
	f, err := os.Create(local)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// uploadDir streams dir as a tar to the sandbox path.
func uploadDir(ctx context.Context, c *client.Client, dir string, dst location) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, dir)) }()
	_, err := c.UploadTar(ctx, dst.ID, dst.Path, pr)
	pr.Close()
	return err
}

// writeTar writes the tree under dir, names relative to it; symlinks are
// stored as symlinks.
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.Uid, h.Gid = "", "", 0, 0
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// downloadDir extracts the sandbox directory's tar under local, through
// os.Root so no entry lands outside it.
func downloadDir(ctx context.Context, c *client.Client, src location, local string) error {
	rc, err := c.DownloadTar(ctx, src.ID, src.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(local)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if err := extract(root, name, h, tr); err != nil {
			return fmt.Errorf("extract %s: %w", h.Name, err)
		}
	}
}

func extract(root *os.Root, name string, h *tar.Header, r io.Reader) error {
	mode := fs.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, mode|0o700)
	case tar.TypeReg:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		return root.Symlink(h.Linkname, name)
	}
	return nil
}
