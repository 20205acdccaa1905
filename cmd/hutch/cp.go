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

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/ids"
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

const cpLong = `Copies a file, or with -r a directory, into a sandbox or out of one: one of
SRC and DST is ID:PATH (a relative PATH is under the sandbox's working
directory), the other a local path, where - is stdin or stdout.

On a terminal it shows its progress on stderr; at the end it says what it
copied ("copied 3 files, 1024 bytes"), or under --json prints it as
{"path":…,"files":…,"bytes":…} (on stderr when stdout carries the file).
An error of this machine's side says "local:".`

// newCpCmd is `hutch cp [-r] SRC DST`.
func newCpCmd(e *env) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "cp [-r] SRC DST",
		Short: "Copy files into or out of a sandbox",
		Long:  cpLong,
		Args:  nArgs(2, 2, "cp takes a source and a destination"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseLocation(args[0]), parseLocation(args[1])
			if (src.ID == "") == (dst.ID == "") {
				return usagef("exactly one of source and destination must be a sandbox path ID:PATH")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			m := newMeter(e)
			res, err := copyFiles(cmd.Context(), e, c, m, src, dst, recursive)
			if lerr := m.finish(); lerr != nil {
				return lerr
			}
			if err != nil {
				return err
			}
			return printCopied(e, res, dst)
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "copy a directory (as tar)")
	return cmd
}

// copyFiles does the copy and says what it moved.
func copyFiles(ctx context.Context, e *env, c *client.Client, m *meter, src, dst location, recursive bool) (api.TarResult, error) {
	switch {
	case src.ID == "" && recursive:
		return uploadDir(ctx, c, m, src.Path, dst)
	case src.ID == "":
		return uploadFile(ctx, e, c, m, src.Path, dst)
	case recursive:
		return downloadDir(ctx, c, m, src, dst.Path)
	}
	return downloadFile(ctx, e, c, m, src, dst.Path)
}

// printCopied reports a copy: a line on stderr, or the JSON summary.
func printCopied(e *env, res api.TarResult, dst location) error {
	if !e.json {
		_, err := fmt.Fprintf(e.stderr, "hutch: copied %d %s, %d bytes\n", res.Files, plural(res.Files, "file", "files"), res.Bytes)
		return err
	}
	if dst.ID == "" && dst.Path == "-" {
		return printJSON(e.stderr, res)
	}
	return printJSON(e.stdout, res)
}

func uploadFile(ctx context.Context, e *env, c *client.Client, m *meter, name string, dst location) (api.TarResult, error) {
	var r io.Reader = e.stdin
	mode := fs.FileMode(0o644)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return api.TarResult{}, local(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return api.TarResult{}, local(err)
		}
		if st.IsDir() {
			return api.TarResult{}, local(fmt.Errorf("%s is a directory; use cp -r", name))
		}
		r, mode = f, st.Mode().Perm()
		if strings.HasSuffix(dst.Path, "/") {
			dst.Path += filepath.Base(name)
		}
	}
	fi, err := c.WriteFile(ctx, dst.ID, dst.Path, mode, m.reader(r))
	if err != nil {
		return api.TarResult{}, err
	}
	return api.TarResult{Path: fi.Path, Files: 1, Bytes: fi.Size}, nil
}

func downloadFile(ctx context.Context, e *env, c *client.Client, m *meter, src location, name string) (api.TarResult, error) {
	rc, err := c.ReadFile(ctx, src.ID, src.Path)
	if err != nil {
		return api.TarResult{}, err
	}
	defer rc.Close()
	if name == "-" {
		n, err := io.Copy(m.writer(e.stdout), rc)
		return api.TarResult{Path: name, Files: 1, Bytes: n}, err
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		name = filepath.Join(name, path.Base(src.Path))
	}
	f, err := os.Create(name)
	if err != nil {
		return api.TarResult{}, local(err)
	}
	n, err := io.Copy(m.writer(f), rc)
	if err != nil {
		f.Close()
		return api.TarResult{}, err
	}
	return api.TarResult{Path: name, Files: 1, Bytes: n}, local(f.Close())
}

// uploadDir streams dir as a tar to the sandbox path.
func uploadDir(ctx context.Context, c *client.Client, m *meter, dir string, dst location) (api.TarResult, error) {
	t := newTarStream(dir)
	res, err := c.UploadTar(ctx, dst.ID, dst.Path, m.through(t))
	if lerr := t.finish(); lerr != nil {
		return api.TarResult{}, lerr
	}
	if err != nil {
		return api.TarResult{}, err
	}
	return *res, nil
}

// downloadDir extracts the sandbox directory's tar under dir, through
// os.Root so no entry lands outside it.
func downloadDir(ctx context.Context, c *client.Client, m *meter, src location, dir string) (api.TarResult, error) {
	res := api.TarResult{Path: dir}
	rc, err := c.DownloadTar(ctx, src.ID, src.Path)
	if err != nil {
		return res, err
	}
	defer rc.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, local(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, local(err)
	}
	defer root.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			res.Files, res.Bytes = m.files, m.bytes.Load()
			return res, nil
		}
		if err != nil {
			return res, err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if err := extract(root, m, name, h, tr); err != nil {
			return res, err
		}
	}
}
