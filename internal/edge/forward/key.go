package forward

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the cluster key's file in the data directory; KeyEnv, the
// environment variable that holds it instead.
const (
	KeyFile = "cluster.key"
	KeyEnv  = "HUTCH_CLUSTER_KEY"
)

// MinKeyBytes is the shortest cluster key taken: 32 bytes, the HMAC's
// own size.
const MinKeyBytes = 32

// LoadKey reads the cluster key that signs node-to-node calls: env (the
// value of HUTCH_CLUSTER_KEY) when set, else <dataDir>/cluster.key, which
// must be private to its owner (mode 0600 or stricter). Every node of one
// fleet must hold the same key. Neither set: nil and no error, and
// nothing is forwarded (a request that would be is answered 503
// cluster_key_missing). The key is the text trimmed of white space, at
// least MinKeyBytes long (`openssl rand -hex 32` makes one).
func LoadKey(env, dataDir string) ([]byte, error) {
	if env != "" {
		return checkKey(env, "$HUTCH_CLUSTER_KEY")
	}
	p := filepath.Join(dataDir, KeyFile)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cluster key %s is readable by others (mode %v): chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	return checkKey(string(b), p)
}

func checkKey(s, from string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) < MinKeyBytes {
		return nil, fmt.Errorf("cluster key in %s is %d bytes; it must be at least %d (openssl rand -hex 32)", from, len(s), MinKeyBytes)
	}
	return []byte(s), nil
}

// DeriveKey is the key for purpose that every node of a fleet derives
// alike from the cluster key: what one node signs for a client (a
// preview URL or cookie), any other checks.
func DeriveKey(clusterKey []byte, purpose string) []byte {
	m := hmac.New(sha256.New, clusterKey)
	m.Write([]byte("hutch-derive/1\n" + purpose))
	return m.Sum(nil)
}
