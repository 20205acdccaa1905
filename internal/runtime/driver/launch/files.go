package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// WriteState writes v as dir/state.json, atomically: a sweeper reading it
// after a crash sees the old state or the new one.
func WriteState(dir string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write sandbox state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
		return fmt.Errorf("write sandbox state: %w", err)
	}
	return nil
}

// ReadState reads dir/state.json into v.
func ReadState(dir string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// WriteEnvelope keeps ev (0600, owned by hutch) in dir so Start can launch
// the agent again after Stop.
func WriteEnvelope(dir string, ev *envelope.Envelope) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "envelope.json"), b, 0o600); err != nil {
		return fmt.Errorf("write sandbox envelope: %w", err)
	}
	return nil
}

// ReadEnvelope reads what WriteEnvelope kept.
func ReadEnvelope(dir string) (*envelope.Envelope, error) {
	b, err := os.ReadFile(filepath.Join(dir, "envelope.json"))
	if err != nil {
		return nil, fmt.Errorf("read sandbox envelope: %w", err)
	}
	var ev envelope.Envelope
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("decode sandbox envelope: %w", err)
	}
	return &ev, nil
}

// RemoveAll removes a sandbox's directory even where the sandbox left
// directories it cannot write (chmod 000), without ever following a
// symlink.
func RemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if e != nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
