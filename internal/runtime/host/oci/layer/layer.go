// Package layer applies OCI and Docker image layers (tar streams, plain,
// gzip or zstd) onto a directory, the way container runtimes do, and safely
// against hostile layers. It owns the one place hutch turns an image's
// bytes into files.
//
// Two modes:
//
//   - Flatten applies a layer onto a root that holds the layers below it
//     (or a snapshot of them): whiteouts delete, an opaque directory loses
//     what the earlier layers put in it. Used layer after layer on one
//     directory, it gives the image's root.
//   - Layer unpacks one layer into a directory of its own, for use as an
//     overlayfs lower layer: a whiteout becomes a 0/0 character device and
//     an opaque directory gets the xattr user.overlay.opaque=y, the form
//     overlayfs reads when mounted with userxattr, as internal/agent/nsinit
//     mounts a sandbox's root. Stats lists both, so a store can keep them
//     in its own records too.
//
// Whatever the layer holds, nothing outside the root changes: every path
// is resolved inside the root with openat2(RESOLVE_IN_ROOT|
// RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV) from a descriptor of the root, the
// final name of an entry is never followed, and files are written to a new
// name and renamed into place, so a symlink or hard link already at that
// name is replaced, never written through. Names with a ".." component are
// refused; absolute names are taken relative to the root, as tar, Docker
// and containerd take them. A symlink in the layer (a -> /etc) is followed
// by a later entry (a/passwd) as it would be inside the sandbox: to the
// root's etc/passwd, never the host's. Symlink targets are stored as they
// are (images hold hundreds of absolute ones); they mean something only
// inside the sandbox, whose root is the image.
//
// What an image must not bring is neutralised: device nodes and FIFOs are
// skipped (or refused, Options.RefuseDevices), setuid and setgid bits are
// cleared on everything but directories (a setgid directory grants
// nothing), file capabilities and every xattr but user.* (and never
// user.overlay.* or trusted.*) are dropped, and ownership is the caller's
// unless Options.Owner maps the layer's ids.
//
// The server reads an image's files too (its /etc/passwd, the directories
// above its working directory): Stat and ReadFile look a path up in a
// stack of layers as the sandbox's overlay shows it, following links
// inside the image's root as the sandbox would, never out to the host's
// files (lookup.go).
//
// Apply is not atomic: a refused layer leaves the root partly applied
// (never anything outside it). Unpack gives atomicity: it unpacks into a
// fresh directory and renames it into place only when the whole layer
// applied and its digests matched.
//
// In Layer mode the layers below are not there to resolve through: a
// path through a lower layer's symlink (lib/x when lib -> usr/lib is
// below) becomes a real directory of this layer, which hides the symlink
// in the overlay, as containerd's overlay unpacking does; a hard link may
// only name a file of the same layer. Builders write real paths, so
// images do not meet either; Flatten resolves both through the root.
//
// Bounds: MaxBytes covers the decompressed stream and the files' sizes
// (holes included), MaxEntries the entries and the directories made for
// them; memory grows with the names a layer makes (at most 255 bytes
// each, interned) and the whiteouts it lists; time with its bytes and
// entries, never with the square of a path's depth.
package layer

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Mode says how a layer meets the layers below it.
type Mode int

const (
	// Flatten applies onto a root holding the layers below: whiteouts and
	// opaque directories delete.
	Flatten Mode = iota
	// Layer unpacks into a directory of the layer's own; whiteouts and
	// opaque directories are recorded in overlayfs's form.
	Layer
)

func (m Mode) String() string {
	if m == Layer {
		return "layer"
	}
	return "flatten"
}

// The defaults of the bounds; zero in Options means these.
const (
	DefaultMaxBytes   = 16 << 30
	DefaultMaxEntries = 1 << 20
)

// Options says how to apply a layer. The zero value flattens, with the
// default bounds, and leaves the files to the caller.
type Options struct {
	Mode Mode

	// MaxBytes bounds the layer's stream, as given and after
	// decompression, and the sum of its files' sizes, holes of sparse
	// files included (a tiny sparse entry may declare a terabyte);
	// MaxEntries bounds the entries read, whatever their type, plus the
	// directories made that no entry described (a/b/c/file makes three).
	// Zero means the default.
	MaxBytes   int64
	MaxEntries int

	// Owner, when set, gives each entry the owner it returns for the ids
	// the layer names (e.g. shifted into a range no host user holds; see
	// Shift); an error refuses the layer. Nil leaves every file to the
	// caller, whatever the layer says.
	Owner func(uid, gid int) (int, int, error)

	// RefuseDevices refuses a layer holding a device node or FIFO; by
	// default they are skipped and counted in Stats.Skipped.
	RefuseDevices bool

	// Xattrs applies the layer's user.* xattrs (never user.overlay.*).
	// Other namespaces are always dropped: security.capability is a
	// privilege like setuid, trusted.* and system.* are the host's.
	Xattrs bool

	// Lower lists, nearest first, the directories of the layers below
	// (each unpacked in Layer mode). In Layer mode a directory the layer
	// needs but does not describe (a/b/file without a/b) takes its mode
	// and owner from the first of them that has it, as an overlay would
	// show it, instead of 0755.
	Lower []string

	// Zstd opens a zstd stream; nil refuses zstd layers. (The package
	// keeps to the standard library; the server wires a decoder, e.g.
	// github.com/klauspost/compress/zstd.)
	Zstd func(io.Reader) (io.ReadCloser, error)

	// Digest and DiffID, when set ("sha256:<hex>"), are checked against
	// the stream as given and after decompression; a mismatch is an error
	// (found at the end: Unpack then discards the layer).
	Digest string
	DiffID string
}

// Stats says what a layer held and what was done with it.
type Stats struct {
	Compression string // "none", "gzip" or "zstd"
	Digest      string // sha256 of the stream as given
	DiffID      string // sha256 of the tar stream

	Entries     int   // tar entries read
	Files       int   // regular files written
	Dirs        int   // directory entries applied
	Symlinks    int   // symlinks written
	Hardlinks   int   // hard links made
	Bytes       int64 // sizes of the files written, holes included
	StreamBytes int64 // bytes of the tar stream

	// Whiteouts and Opaque list the paths (relative to the root) a
	// whiteout removed or marked, and the directories made opaque.
	Whiteouts []string
	Opaque    []string

	// SetuidCleared counts files whose setuid or setgid bit was cleared;
	// XattrsDropped the xattrs not applied.
	SetuidCleared int
	XattrsDropped int
	// Skipped lists the first entries not applied (device nodes, FIFOs,
	// AUFS metadata), SkippedTotal counts them all.
	Skipped      []Skip
	SkippedTotal int
}

// Skip is an entry that was not applied and why.
type Skip struct {
	Name   string
	Reason string // "device", "fifo", "whiteout_meta"
}

const maxSkipList = 64

// The stable codes of the errors Apply and Unpack return (errdefs.Error's
// Code; test with errdefs.HasCode).
const (
	CodeInvalidTar          = "layer_invalid_tar"       // not a tar stream, or a truncated one
	CodePathEscapes         = "layer_path_escapes"      // a name or hard link target with ".."
	CodeNameTooLong         = "layer_name_too_long"     // a path over 4096 bytes, a name over 255
	CodeInvalidWhiteout     = "layer_invalid_whiteout"  // ".wh." naming "", ".", "..", or inside a path
	CodeUnsupportedEntry    = "layer_unsupported_entry" // a tar type hutch does not unpack
	CodeDeviceRefused       = "layer_device_refused"    // a device node or FIFO under RefuseDevices
	CodeHardlinkInvalid     = "layer_hardlink_invalid"  // a hard link to nothing in the root, or to a directory
	CodeNotADirectory       = "layer_not_a_directory"   // a path through a file or a symlink that leads nowhere
	CodeTooLarge            = "layer_too_large"         // over MaxBytes
	CodeTooManyEntries      = "layer_too_many_entries"  // over MaxEntries
	CodeCompression         = "layer_compression_unsupported"
	CodeOwner               = "layer_owner_unmapped" // Options.Owner refused an id
	CodeWhiteoutUnsupported = "layer_whiteout_unsupported"
	CodeDigestMismatch      = "layer_digest_mismatch"
	CodeExists              = "layer_exists" // Unpack: the destination exists
	CodeNoSpace             = "layer_no_space"
	CodePermission          = "layer_permission_denied"
)

// Apply applies the layer r onto root, an existing directory, and says
// what it did. root must not change under it by anyone else. On error
// (ctx's own when it ends, otherwise an errdefs.Error with one of the
// codes above) the root may hold part of the layer and must be discarded
// (see Unpack); nothing outside it has changed.
func Apply(ctx context.Context, root string, r io.Reader, opts Options) (Stats, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stats{}, fmt.Errorf("layer: open root %s: %w", root, err)
	}
	defer unix.Close(fd)
	return applyAt(ctx, fd, r, opts)
}

// applyAt is Apply on a root already open (O_PATH).
func applyAt(ctx context.Context, rootfd int, r io.Reader, opts Options) (st Stats, retErr error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	s, err := openStream(r, opts)
	if err != nil {
		return Stats{}, err
	}
	defer s.close()
	a, err := newApplier(ctx, rootfd, opts)
	if err != nil {
		return Stats{}, err
	}
	defer a.close()
	a.stats.Compression = s.compression
	tr := tar.NewReader(s.tar)
	for {
		if err := ctx.Err(); err != nil {
			return a.stats, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return a.stats, a.streamError(err, s)
		}
		if err := a.entry(hdr, tr); err != nil {
			return a.stats, a.streamError(err, s)
		}
	}
	if err := s.finish(&a.stats, opts); err != nil {
		return a.stats, err
	}
	if err := a.finish(); err != nil {
		return a.stats, err
	}
	return a.stats, nil
}

// streamError prefers the stream's own errors (over the limit, not
// decompressible) to what the tar reader made of them.
func (a *applier) streamError(err error, s *stream) error {
	if s.err != nil {
		return s.err
	}
	var e *errdefs.Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, tar.ErrInsecurePath) {
		return errdefs.Wrap(errdefs.ErrInvalid, CodeInvalidTar, err, "the layer is not a valid tar stream (after entry %d)", a.stats.Entries)
	}
	return err
}

// Shift returns an Owner that adds base to every id below size and refuses
// the others: the layer's ids 0…size-1 land in the host range base….
func Shift(uidBase, gidBase, size int) func(uid, gid int) (int, int, error) {
	return func(uid, gid int) (int, int, error) {
		if uid < 0 || uid >= size || gid < 0 || gid >= size {
			return 0, 0, fmt.Errorf("ids %d:%d are outside the %d mapped", uid, gid, size)
		}
		return uidBase + uid, gidBase + gid, nil
	}
}

// The names of whiteouts (OCI image spec, layer.md, inherited from AUFS).
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// Limits of names: Linux's PATH_MAX and NAME_MAX.
const (
	maxPath = 4096
	maxName = 255
)

// entryName checks a tar entry's name and returns it relative to the root:
// clean, no leading slash, "." for the root itself. A ".." component is
// refused, never clamped: no layer a builder made has one. A component
// with the whiteout prefix may only be the last.
func entryName(name string) (string, error) {
	switch {
	case name == "":
		return "", errdefs.Invalid(CodeInvalidTar, "a layer entry has an empty name")
	case strings.IndexByte(name, 0) >= 0:
		return "", errdefs.Invalid(CodeInvalidTar, "a layer entry name holds a NUL byte")
	case len(name) > maxPath:
		return "", errdefs.Invalid(CodeNameTooLong, "a layer entry name is %d bytes long, over the %d a path may have", len(name), maxPath)
	}
	parts := strings.Split(name, "/")
	last := lastPart(parts)
	clean := make([]string, 0, len(parts))
	for i, c := range parts {
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			return "", errdefs.Invalid(CodePathEscapes, "layer entry %q has a .. component", name)
		case len(c) > maxName:
			return "", errdefs.Invalid(CodeNameTooLong, "layer entry %q has a name over %d bytes", trunc(name), maxName)
		case strings.HasPrefix(c, whiteoutPrefix) && i < last:
			return "", errdefs.Invalid(CodeInvalidWhiteout, "layer entry %q has a whiteout inside its path", name)
		}
		clean = append(clean, c)
	}
	if len(clean) == 0 {
		return ".", nil
	}
	return strings.Join(clean, "/"), nil
}

// lastPart is the index of the last non-empty component of parts.
func lastPart(parts []string) int {
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] != "" && parts[i] != "." {
			return i
		}
	}
	return -1
}

// trunc shortens a name for a message.
func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// splitRel returns the directory of rel ("." at the top) and its name.
func splitRel(rel string) (string, string) {
	dir, name := path.Split(rel)
	if dir == "" {
		return ".", name
	}
	return dir[:len(dir)-1], name
}

// joinRel joins a directory relative to the root and a name.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// ioError classifies a system call's failure on the layer entry name.
func ioError(err error, name string) error {
	if err == nil {
		return nil
	}
	var e *errdefs.Error
	if errors.As(err, &e) {
		return err
	}
	switch {
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return errdefs.Wrap(errdefs.ErrInsufficientStorage, CodeNoSpace, err, "no space left to unpack layer entry %q", trunc(name))
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return errdefs.Wrap(errdefs.ErrForbidden, CodePermission, err, "permission denied unpacking layer entry %q", trunc(name))
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeNotADirectory, err, "layer entry %q lies below something that is not a directory", trunc(name))
	case errors.Is(err, unix.EXDEV):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeNotADirectory, err, "layer entry %q lies across a mount point", trunc(name))
	case errors.Is(err, unix.ENAMETOOLONG):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeNameTooLong, err, "layer entry %q: name too long", trunc(name))
	}
	return fmt.Errorf("layer entry %q: %w", trunc(name), err)
}

// isNotExist is ENOENT.
func isNotExist(err error) bool { return errors.Is(err, unix.ENOENT) || errors.Is(err, os.ErrNotExist) }
