// Package hostids hands out ranges of host uids (and the gids of the same
// numbers) to sandboxes, host-wide. A registry directory holds one file per
// range in use, named by the range's first id and holding the directory of
// the sandbox that owns it, so several hutch servers (or test runs) on one
// host never share ids: stop and destroy kill every process of them. The
// registry lives under /run, which is cleared at boot, when no sandbox
// runs.
package hostids

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Registry is the default registry directory.
const Registry = "/run/hutch/uids"

// Pool hands out ranges of Size ids starting at Base + k*Size for k in
// [0, Count).
type Pool struct {
	dir   string
	base  uint32
	size  uint32
	count uint32

	mu   sync.Mutex
	used map[uint32]string // first id → owner directory
	next uint32            // range index to try first
}

// New returns a pool over the registry dir, creating it. Ranges must not
// overlap those of another pool on the same registry.
func New(dir string, base, size, count uint32) (*Pool, error) {
	if size == 0 || count == 0 || uint64(base)+uint64(size)*uint64(count) > 1<<32-1 {
		return nil, fmt.Errorf("hostids: %d ranges of %d from %d do not fit in uid_t", count, size, base)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hostids: registry: %w", err)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	// Start at a random place so servers on one host rarely probe the
	// same ranges.
	return &Pool{dir: dir, base: base, size: size, count: count, used: map[uint32]string{},
		next: binary.BigEndian.Uint32(b[:]) % count}, nil
}

// Size is the number of ids in each range.
func (p *Pool) Size() uint32 { return p.size }

// Take reserves a free range for the sandbox in owner and returns its first
// id.
func (p *Pool) Take(owner string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := uint32(0); i < p.count; i++ {
		k := (p.next + i) % p.count
		first := p.base + k*p.size
		if _, ok := p.used[first]; ok {
			continue
		}
		f, err := os.OpenFile(p.file(first), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("hostids: registry: %w", err)
		}
		_, err = f.WriteString(owner)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p.file(first))
			return 0, fmt.Errorf("hostids: registry: %w", err)
		}
		p.used[first] = owner
		p.next = k + 1
		return first, nil
	}
	return 0, fmt.Errorf("all %d host id ranges are in use", p.count)
}

// Claim records that the sandbox in owner holds the range starting at
// first (after a restart, or when a warm sandbox's directory moves).
func (p *Pool) Claim(first uint32, owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used[first] = owner
	_ = os.WriteFile(p.file(first), []byte(owner), 0o600)
}

// Release frees the range starting at first.
func (p *Pool) Release(first uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, first)
	_ = os.Remove(p.file(first))
}

// Owner returns the owner directory recorded for the range starting at
// first, host-wide; false when no server holds it.
func (p *Pool) Owner(first uint32) (string, bool) {
	b, err := os.ReadFile(p.file(first))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// staleAfter is how long a range whose owner directory is gone stays
// registered when the owner is another server's: a warm sandbox's
// directory moves before its range is claimed again.
const staleAfter = 10 * time.Minute

// Sweep releases the ranges Stale returns.
func (p *Pool) Sweep(prefix string) {
	for _, first := range p.Stale(prefix) {
		p.Release(first)
	}
}

// Stale returns the ranges whose owner directory no longer exists (a
// crash between teardown and release, or a server stopped with its
// sandboxes whose data directory was then removed): at once when the owner
// lies under prefix (this server's), after staleAfter otherwise.
func (p *Pool) Stale(prefix string) []uint32 {
	var out []uint32
	entries, _ := os.ReadDir(p.dir)
	for _, e := range entries {
		first, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil || !p.ours(uint32(first)) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		if err != nil {
			continue
		}
		if _, err := os.Stat(string(b)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		info, err := e.Info()
		if strings.HasPrefix(string(b), prefix+"/") || (err == nil && time.Since(info.ModTime()) > staleAfter) {
			out = append(out, uint32(first))
		}
	}
	return out
}

// ours reports whether first starts one of this pool's ranges.
func (p *Pool) ours(first uint32) bool {
	return first >= p.base && (first-p.base)%p.size == 0 && (first-p.base)/p.size < p.count
}

func (p *Pool) file(first uint32) string {
	return filepath.Join(p.dir, strconv.FormatUint(uint64(first), 10))
}
