package secrets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// KeyEnv is the environment variable that holds the master key. It wins
// over the key file.
const KeyEnv = "HUTCH_SECRETS_KEY"

// KeyFile is the master key file's name in the data directory.
const KeyFile = "secrets.key"

// KeySource says where the master key came from.
type KeySource string

// The sources of a master key.
const (
	KeyFromEnv  KeySource = "env"     // $HUTCH_SECRETS_KEY
	KeyFromFile KeySource = "file"    // an existing key file
	KeyCreated  KeySource = "created" // a key file made now
)

// maxKeyFile bounds what is read of a key file.
const maxKeyFile = 4 << 10

// ParseKey decodes a master key written as 64 hex digits, or as base64
// (standard or URL alphabet, padded or not) of KeySize bytes; surrounding
// white space is ignored. Its errors never hold the text.
func ParseKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	var (
		key []byte
		err error
	)
	switch len(text) {
	case 2 * KeySize:
		key, err = hex.DecodeString(text)
	case base64.StdEncoding.EncodedLen(KeySize), base64.RawStdEncoding.EncodedLen(KeySize):
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if key, err = enc.DecodeString(text); err == nil {
				break
			}
		}
	default:
		err = errors.New("wrong length")
	}
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("not a master key: want %d random bytes as base64 (44 characters, e.g. from 'openssl rand -base64 32') or as 64 hex digits; got %d characters that are neither",
			KeySize, len(text))
	}
	return key, nil
}

// LoadKey returns a Sealer for the master key and where it came from. env
// is the value of $HUTCH_SECRETS_KEY: when it is not empty it must parse
// (ParseKey), and it wins. Otherwise the key is read from
// <dataDir>/secrets.key, which must be a regular file owned by this user
// and readable by no one else (no group or other permission bits) holding
// one key as ParseKey reads it. When that file does not exist, LoadKey
// calls beforeCreate (when set; its error stops it) and creates it: 32
// bytes from crypto/rand, in base64, mode 0600, written beside and linked
// into place so that an existing file is never replaced.
func LoadKey(env, dataDir string, beforeCreate func() error) (*Sealer, KeySource, error) {
	if env != "" {
		key, err := ParseKey(env)
		if err != nil {
			return nil, "", fmt.Errorf("$%s: %w", KeyEnv, err)
		}
		return sealer(key, KeyFromEnv)
	}
	path := filepath.Join(dataDir, KeyFile)
	key, err := readKeyFile(path)
	if err == nil {
		return sealer(key, KeyFromFile)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	if beforeCreate != nil {
		if err := beforeCreate(); err != nil {
			return nil, "", err
		}
	}
	key, created, err := createKeyFile(path)
	if err != nil {
		return nil, "", err
	}
	if !created {
		return sealer(key, KeyFromFile)
	}
	return sealer(key, KeyCreated)
}

// sealer makes the Sealer for key and clears key.
func sealer(key []byte, src KeySource) (*Sealer, KeySource, error) {
	defer clear(key)
	s, err := NewSealer(key)
	if err != nil {
		return nil, "", err
	}
	return s, src, nil
}

// readKeyFile reads and checks the key file at path. A missing file is an
// fs.ErrNotExist error.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %04o: it holds the master key of every stored secret and must be readable by its owner only; run 'chmod 600 %s'",
			path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("key file %s belongs to uid %d, not to uid %d that hutch runs as", path, st.Uid, os.Geteuid())
	}
	text, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer clear(text)
	key, err := ParseKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("key file %s holds no valid key: %w", path, err)
	}
	return key, nil
}

// createKeyFile makes a new key file at path and returns its key. When
// another process made one first, it returns that one's key and created
// false.
func createKeyFile(path string) (_ []byte, created bool, _ error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("key file: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("secrets key: %w", err)
	}
	defer func() {
		if !created {
			clear(key)
		}
	}()
	text := append(base64.StdEncoding.AppendEncode(nil, key), '\n')
	defer clear(text)

	f, err := os.CreateTemp(dir, "."+KeyFile+".tmp-*")
	if err != nil {
		return nil, false, fmt.Errorf("key file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // the link below keeps the file
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(text)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("key file: write %s: %w", tmp, err)
	}
	// A link, unlike a rename, never replaces a file that appeared since.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			theirs, err := readKeyFile(path)
			return theirs, false, err
		}
		return nil, false, fmt.Errorf("key file: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, false, fmt.Errorf("key file: %w", err)
	}
	return key, true, nil
}

// syncDir makes a new name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Load is LoadKey as hutch serve starts, checked against st. It refuses to
// make a new key file while st holds secrets (they were sealed with a key
// that is now missing, and a new one could not open them), and warns about
// secrets sealed with any key but the one loaded: they cannot be read until
// that key is back. It logs where the key came from and its ID, never the
// key.
func Load(ctx context.Context, st store.Secrets, env, dataDir string, log *slog.Logger) (*Sealer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx = tenancy.System(ctx)
	path := filepath.Join(dataDir, KeyFile)
	s, src, err := LoadKey(env, dataDir, func() error {
		counts, err := st.SecretKeyIDs(ctx)
		if err != nil {
			return fmt.Errorf("count stored secrets: %w", err)
		}
		n := 0
		for _, c := range counts {
			n += c
		}
		if n > 0 {
			return fmt.Errorf("key file %s is missing, but the store holds %d secrets sealed with a master key: a new key could not open them. Restore the file or set $%s to that key",
				path, n, KeyEnv)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	counts, err := st.SecretKeyIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("count stored secrets: %w", err)
	}
	var others []string
	n := 0
	for id, c := range counts {
		if id != s.KeyID() {
			others = append(others, id)
			n += c
		}
	}
	if n > 0 {
		slices.Sort(others)
		log.Warn("some stored secrets were sealed with another master key and cannot be read until it is back; replace or delete them",
			"count", n, "other_key.ids", others, logattr.Key(s.KeyID()))
	}
	switch src {
	case KeyCreated:
		log.Info("created the secrets master key; back the file up: without it no stored secret can be read",
			"path", path, logattr.Key(s.KeyID()))
	case KeyFromFile:
		log.Info("secrets master key read from its file", "path", path, logattr.Key(s.KeyID()))
	default:
		log.Info("secrets master key read from $"+KeyEnv, logattr.Key(s.KeyID()))
	}
	return s, nil
}
