package main

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// tarStream is a tar of a local directory, written as it is read.
type tarStream struct {
	*io.PipeReader
	done chan error
}

// newTarStream starts writing the tar of dir.
func newTarStream(dir string) *tarStream {
	pr, pw := io.Pipe()
	t := &tarStream{PipeReader: pr, done: make(chan error, 1)}
	go func() {
		err := writeTar(pw, dir)
		pw.CloseWithError(err)
		t.done <- err
	}()
	return t
}

// finish closes the stream and returns the error of reading the local
// files, if there was one: the cause of any failure of the upload that
// read the stream, and a failure even when the upload took what it got.
func (t *tarStream) finish() error {
	t.Close()
	var l *localError
	if err := <-t.done; errors.As(err, &l) {
		return err
	}
	return nil
}

// writeTar writes the tree under dir, names relative to it; symlinks are
// stored as symlinks. Errors of reading the tree are local.
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return local(err)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return local(err)
		}
		info, err := d.Info()
		if err != nil {
			return local(err)
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return local(err)
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return local(err)
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
			return local(err)
		}
		defer f.Close()
		_, err = io.Copy(tw, localReader{f})
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extract writes one tar entry under root; the meter counts its bytes
// and files and marks errors of writing them as local.
func extract(root *os.Root, m *meter, name string, h *tar.Header, r io.Reader) error {
	mode := fs.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		return local(root.MkdirAll(name, mode|0o700))
	case tar.TypeReg:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return local(err)
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return local(err)
		}
		if _, err := io.Copy(m.writer(f), r); err != nil {
			f.Close()
			return err
		}
		m.files++
		return local(f.Close())
	case tar.TypeSymlink:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return local(err)
		}
		return local(root.Symlink(h.Linkname, name))
	}
	return nil
}
