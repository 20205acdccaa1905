// Package keyfile keeps the server's signing keys: random bytes in hex in
// a 0600 file under the data directory, made on first use so that what
// they sign outlives a restart. Deleting a file and restarting revokes
// everything its key signed.
package keyfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Load returns the key kept in path, creating it with size random bytes
// when there is none. A key shorter than size is an error.
func Load(path string, size int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, size)
		rand.Read(key)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return Load(path, size) // another start made it meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(key) + "\n")
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("key file: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < size {
		return nil, fmt.Errorf("key file %s: want %d or more bytes in hex", path, size)
	}
	return key, nil
}
