package process

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Sandbox uids are taken from a range far above any real account.
const (
	uidBase  = 2_100_000_000
	uidCount = 1 << 16
)

// uidPool hands out one host uid per sandbox.
type uidPool struct {
	mu   sync.Mutex
	used map[uint32]string // uid → sandbox id
	next uint32
}

func newUIDPool() *uidPool { return &uidPool{used: map[uint32]string{}} }

func (p *uidPool) take(id string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; i < uidCount; i++ {
		uid := uidBase + (p.next+uint32(i))%uidCount
		if _, ok := p.used[uid]; !ok {
			p.used[uid] = id
			p.next = uid - uidBase + 1
			return uid, nil
		}
	}
	return 0, fmt.Errorf("all %d sandbox uids are in use", uidCount)
}

func (p *uidPool) claim(uid uint32, id string) {
	p.mu.Lock()
	p.used[uid] = id
	p.mu.Unlock()
}

func (p *uidPool) release(uid uint32) {
	p.mu.Lock()
	delete(p.used, uid)
	p.mu.Unlock()
}

// loadUIDs claims the uids of sandboxes already on disk.
func (d *Driver) loadUIDs() error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	for _, e := range entries {
		st, err := readState(filepath.Join(d.dir, e.Name()))
		if err == nil && st.UID != 0 {
			d.uids.claim(st.UID, e.Name())
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
