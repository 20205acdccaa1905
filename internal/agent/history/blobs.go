package history

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// errFileTooLarge is a file over MaxFileBytes, found while copying it.
var errFileTooLarge = errors.New("file over the limit")

func (s *Store) blobPath(sum string) string {
	return filepath.Join(s.dir, "blobs", sum[:2], sum)
}

// scanBlobs lists the blobs on disk with their sizes.
func (s *Store) scanBlobs() error {
	shards, err := os.ReadDir(filepath.Join(s.dir, "blobs"))
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	for _, shard := range shards {
		dir := filepath.Join(s.dir, "blobs", shard.Name())
		des, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		for _, de := range des {
			sum := de.Name()
			if !validSum(sum) || sum[:2] != shard.Name() || !de.Type().IsRegular() {
				os.RemoveAll(filepath.Join(dir, sum))
				continue
			}
			fi, err := de.Info()
			if err != nil {
				return fmt.Errorf("history: %w", err)
			}
			s.blobs[sum] = fi.Size()
			s.bytes += fi.Size()
		}
	}
	return nil
}

// putBlob copies what r holds (at most limit bytes) into the store and
// returns its SHA-256 and size, and whether the blob is new. The copy goes
// to a temporary file renamed to its hash, so a blob on disk always holds
// what its name says.
func (s *Store) putBlob(r io.Reader, limit int64) (sum string, n int64, created bool, retErr error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-")
	if err != nil {
		return "", 0, false, storeError(err)
	}
	defer func() {
		f.Close()
		if retErr != nil || !created {
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(r, limit+1))
	s.hashed.Add(n)
	switch {
	case err != nil:
		return "", 0, false, storeError(err)
	case n > limit:
		return "", 0, false, errFileTooLarge
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if _, ok := s.blobs[sum]; ok {
		return sum, n, false, nil
	}
	if err := f.Chmod(0o400); err != nil {
		return "", 0, false, storeError(err)
	}
	if err := os.Mkdir(filepath.Dir(s.blobPath(sum)), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", 0, false, storeError(err)
	}
	if err := os.Rename(f.Name(), s.blobPath(sum)); err != nil {
		return "", 0, false, storeError(err)
	}
	s.blobs[sum] = n
	s.bytes += n
	return sum, n, true, nil
}

// hashReader hashes what r holds, at most limit bytes.
func (s *Store) hashReader(r io.Reader, limit int64) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, limit+1))
	s.hashed.Add(n)
	switch {
	case err != nil:
		return "", 0, err
	case n > limit:
		return "", 0, errFileTooLarge
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// openBlob opens blob sum for reading.
func (s *Store) openBlob(sum string) (*os.File, error) {
	fd, err := unix.Open(s.blobPath(sum), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("history: blob %s of the checkpoint: %w", sum, err)
	}
	return os.NewFile(uintptr(fd), s.blobPath(sum)), nil
}

func (s *Store) removeBlob(sum string) {
	if err := os.Remove(s.blobPath(sum)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return // kept, and counted, until a later collection removes it
	}
	s.bytes -= s.blobs[sum]
	delete(s.blobs, sum)
	delete(s.refs, sum)
}

// addRefs counts m's blobs as used once more.
func (s *Store) addRefs(m *manifest) {
	for sum := range m.blobSums() {
		s.refs[sum]++
	}
}

// dropRefs counts m's blobs as used once less and removes those no
// checkpoint names any more.
func (s *Store) dropRefs(m *manifest) {
	for sum := range m.blobSums() {
		if s.refs[sum]--; s.refs[sum] <= 0 {
			s.removeBlob(sum)
		}
	}
}

// storeError classifies an error of the store's own files.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return errdefs.Wrap(errdefs.ErrTooLarge, "no_space", err, "no space left for the file history")
	}
	return fmt.Errorf("history: %w", err)
}
