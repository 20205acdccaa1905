// Package diskguard keeps the control plane's own state from sharing fate
// with sandbox data on the data directory's filesystem. It holds a
// reserve: a file of Reserve bytes (the ballast) that only the store may
// give up, so a store write that finds the filesystem full frees the
// ballast and goes through; and a low-water mark, below which calls that
// grow sandbox data through the API are refused with 507 and the reason.
// Free space is what an unprivileged user may still take (statfs f_bavail)
// and free inodes likewise: hutch runs as root, and root's own reserve on
// the filesystem is not for sandbox traffic to use up.
package diskguard

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// BallastName is the reserve file in the data directory.
const BallastName = ".reserve"

// checkEvery bounds how often Check reads the filesystem's counts.
const checkEvery = time.Second

// Config sizes the reserve.
type Config struct {
	Dir string // the data directory
	// Reserve is the ballast's size and the free space below which
	// sandbox growth is refused.
	Reserve int64
	// ReserveInodes is the count of free inodes below which sandbox growth
	// is refused.
	ReserveInodes uint64
	Log           *slog.Logger
}

// Guard watches the data directory's filesystem.
type Guard struct {
	cfg     Config
	ballast string

	mu      sync.Mutex
	checked time.Time
	low     error // why growth is refused now; nil when it is not
}

// New returns the guard; Start makes the ballast.
func New(cfg Config) *Guard {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Guard{cfg: cfg, ballast: filepath.Join(cfg.Dir, BallastName)}
}

// Start makes the ballast if it is not there. A filesystem too full for it
// is logged, not fatal: the server may be started to clean up.
func (g *Guard) Start() error {
	err := g.fill()
	if errors.Is(err, unix.ENOSPC) {
		g.cfg.Log.Error("no room for the data directory's reserve: free space on its filesystem", "path", g.ballast, "bytes", g.cfg.Reserve)
		return nil
	}
	return err
}

// fill makes the ballast with its blocks allocated, 0600.
func (g *Guard) fill() (retErr error) {
	if st, err := os.Stat(g.ballast); err == nil && st.Size() >= g.cfg.Reserve {
		return nil
	}
	f, err := os.OpenFile(g.ballast, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("disk reserve: %w", err)
	}
	defer func() {
		f.Close()
		if retErr != nil {
			os.Remove(g.ballast)
		}
	}()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, g.cfg.Reserve); err != nil {
		return fmt.Errorf("disk reserve: %w", err)
	}
	return nil
}

// Release frees the reserve for the store, once the filesystem is full.
// It reports whether it freed anything: the store then tries again.
func (g *Guard) Release() bool {
	if err := os.Remove(g.ballast); err != nil {
		return false
	}
	g.cfg.Log.Error("the data directory's filesystem is full: the reserve was freed for hutch's own state; free space there", "path", g.cfg.Dir, "bytes", g.cfg.Reserve)
	g.mu.Lock()
	g.checked = time.Time{}
	g.mu.Unlock()
	return true
}

// Check returns a 507 error naming what is short when the filesystem is
// below the reserve, for a call about to grow sandbox data (what, e.g.
// "a new sandbox"). Once there is room again it restores the ballast.
func (g *Guard) Check(what string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); now.Sub(g.checked) >= checkEvery {
		g.checked = now
		g.low = g.measure()
		if g.low == nil {
			if err := g.fill(); err != nil {
				g.cfg.Log.Warn("restore the data directory's reserve", "err", err)
			}
		}
	}
	if g.low != nil {
		return errdefs.Wrap(errdefs.ErrInsufficientStorage, "insufficient_storage", g.low, "%s is refused: %s", what, g.low.Error())
	}
	return nil
}

// measure says why the filesystem is below the reserve, or nil.
func (g *Guard) measure() error {
	var st unix.Statfs_t
	if err := unix.Statfs(g.cfg.Dir, &st); err != nil {
		return nil // unknown: nothing to refuse on
	}
	free := int64(st.Bavail) * st.Bsize
	_, ballast := os.Stat(g.ballast)
	want := g.cfg.Reserve
	if ballast != nil {
		want *= 2 // the ballast must fit back, and leave the reserve
	}
	switch {
	case free < want:
		return fmt.Errorf("the filesystem of hutch's data directory has %d MiB free, below its reserve of %d MiB; free space there", free>>20, want>>20)
	case st.Files > 0 && st.Ffree < g.cfg.ReserveInodes:
		return fmt.Errorf("the filesystem of hutch's data directory has %d inodes free, below its reserve of %d; remove files there", st.Ffree, g.cfg.ReserveInodes)
	}
	return nil
}
