package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// defaultURL is where `hutch serve` listens unless told otherwise.
const defaultURL = "http://127.0.0.1:7070"

// defaultDataDir is the server's default data directory, relative to the
// directory it was started in; it holds admin.key.
const defaultDataDir = "hutch-data"

// adminKeyFile is the file under the data directory that holds the admin
// API key the server writes on first start.
const adminKeyFile = "admin.key"

// config is where the CLI finds its server and key.
type config struct {
	URL string
	Key string
	// KeySource says where Key came from: "HUTCH_API_KEY", a key file's
	// path, or "" when there is no key.
	KeySource string
}

// loadConfig reads HUTCH_URL and HUTCH_API_KEY; without HUTCH_API_KEY it
// falls back to the admin key of a local server, in $HUTCH_DATA/admin.key
// or, when HUTCH_DATA is unset, ./hutch-data/admin.key. A missing key
// file is no error (the server will say the key is missing); an
// unreadable or empty one is.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{URL: getenv("HUTCH_URL")}
	if cfg.URL == "" {
		cfg.URL = defaultURL
	}
	if k := strings.TrimSpace(getenv("HUTCH_API_KEY")); k != "" {
		cfg.Key, cfg.KeySource = k, "HUTCH_API_KEY"
		return cfg, nil
	}
	dir := getenv("HUTCH_DATA")
	if dir == "" {
		dir = defaultDataDir
	}
	path := filepath.Join(dir, adminKeyFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cfg, nil
	case err != nil:
		return cfg, fmt.Errorf("read the admin key: %w (set HUTCH_API_KEY instead)", err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" || strings.ContainsAny(k, " \t\r\n") {
		return cfg, fmt.Errorf("%s does not hold one API key (set HUTCH_API_KEY instead)", path)
	}
	cfg.Key, cfg.KeySource = k, path
	return cfg, nil
}

// keySourceText names where the key came from, for error hints.
func (c config) keySourceText() string {
	if c.KeySource == "" {
		return "nowhere (HUTCH_API_KEY is unset and no admin.key was found)"
	}
	return c.KeySource
}
