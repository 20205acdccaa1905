package process

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Sandbox uids are taken from a range far above any real account.
const (
	uidBase  = 2_100_000_000
	uidCount = 1 << 20
)

// uidRegistry is the host-wide record of sandbox uids in use, one file per
// uid holding the sandbox's directory. Several hutch servers (or test
// runs) on one host must never share a uid: stop and destroy kill every
// process of it. /run is cleared at boot, when no sandbox runs.
const uidRegistry = "/run/hutch/uids"

// uidPool hands out one host uid per sandbox.
type uidPool struct {
	mu   sync.Mutex
	used map[uint32]string // uid → sandbox directory
	next uint32
}

func newUIDPool() (*uidPool, error) {
	if err := os.MkdirAll(uidRegistry, 0o700); err != nil {
		return nil, fmt.Errorf("uid registry: %w", err)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	// Start at a random place so servers on one host rarely probe the
	// same uids.
	return &uidPool{used: map[uint32]string{}, next: binary.BigEndian.Uint32(b[:]) % uidCount}, nil
}

// take reserves a free uid for the sandbox in dir, host-wide.
func (p *uidPool) take(dir string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := uint32(0); i < uidCount; i++ {
		uid := uidBase + (p.next+i)%uidCount
		if _, ok := p.used[uid]; ok {
			continue
		}
		f, err := os.OpenFile(registryFile(uid), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("uid registry: %w", err)
		}
		_, err = f.WriteString(dir)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(registryFile(uid))
			return 0, fmt.Errorf("uid registry: %w", err)
		}
		p.used[uid] = dir
		p.next = uid - uidBase + 1
		return uid, nil
	}
	return 0, fmt.Errorf("all %d sandbox uids are in use", uidCount)
}

// claim records that the sandbox in dir holds uid (after a restart, or
// when a warm agent's directory moves).
func (p *uidPool) claim(uid uint32, dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used[uid] = dir
	_ = os.WriteFile(registryFile(uid), []byte(dir), 0o600)
}

func (p *uidPool) release(uid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, uid)
	_ = os.Remove(registryFile(uid))
}

func registryFile(uid uint32) string {
	return filepath.Join(uidRegistry, strconv.FormatUint(uint64(uid), 10))
}

// loadUIDs claims the uids of sandboxes already on disk.
func (d *Driver) loadUIDs() error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(d.dir, e.Name())
		st, err := readState(dir)
		if err == nil && st.UID != 0 {
			d.uids.claim(st.UID, dir)
		}
	}
	return nil
}

// state is the driver's part of a Handle; a copy is kept in the sandbox's
// directory so the sweeper can clean up what the store does not know.
type state struct {
	Dir       string `json:"dir"`
	UID       uint32 `json:"uid,omitempty"`
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // /proc/<pid>/stat field 22, guards against pid reuse
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}

func writeState(st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(st.Dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(st.Dir, "state.json"))
}

// sweepUIDs frees registry entries of this driver whose sandbox directory
// is gone (a crash between teardown and release).
func (d *Driver) sweepUIDs() {
	if d.uids == nil {
		return
	}
	entries, _ := os.ReadDir(uidRegistry)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(uidRegistry, e.Name()))
		if err != nil || !strings.HasPrefix(string(b), d.dir+"/") {
			continue
		}
		if _, err := os.Stat(string(b)); errors.Is(err, fs.ErrNotExist) {
			if uid, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
				d.uids.release(uint32(uid))
			}
		}
	}
}
