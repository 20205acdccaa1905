package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

var testKey = bytes.Repeat([]byte{0xA5, 0x3C}, KeySize/2)

func sealerID(t *testing.T, key []byte) string {
	t.Helper()
	s, err := NewSealer(bytes.Clone(key))
	if err != nil {
		t.Fatal(err)
	}
	return s.KeyID()
}

func TestLoadKeyFromEnv(t *testing.T) {
	want := sealerID(t, testKey)
	for name, env := range map[string]string{
		"base64":         base64.StdEncoding.EncodeToString(testKey),
		"base64 raw":     base64.RawStdEncoding.EncodeToString(testKey),
		"base64 url":     base64.URLEncoding.EncodeToString(testKey),
		"hex":            hex.EncodeToString(testKey),
		"HEX":            strings.ToUpper(hex.EncodeToString(testKey)),
		"with a newline": base64.StdEncoding.EncodeToString(testKey) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, src, err := LoadKey(env, dir, nil)
			if err != nil {
				t.Fatalf("LoadKey: %v", err)
			}
			if src != KeyFromEnv || s.KeyID() != want {
				t.Errorf("source %q key %s; want env and %s", src, s.KeyID(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a key from the environment made a key file: %v", err)
			}
		})
	}
}

func TestLoadKeyBadEnv(t *testing.T) {
	for name, env := range map[string]string{
		"short base64":       base64.StdEncoding.EncodeToString(testKey[:16]),
		"long hex":           hex.EncodeToString(append(bytes.Clone(testKey), 1)),
		"hex with a non-hex": "zz" + hex.EncodeToString(testKey)[2:],
		"a passphrase":       "correct horse battery staple",
		"base64 of 33":       base64.StdEncoding.EncodeToString(append(bytes.Clone(testKey), 1)),
		"44 junk":            strings.Repeat("!", 44),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, _, err := LoadKey(env, dir, nil)
			if err == nil {
				t.Fatal("LoadKey took it")
			}
			if !strings.Contains(err.Error(), KeyEnv) || !strings.Contains(err.Error(), "base64") {
				t.Errorf("error %q does not say what is wrong where", err)
			}
			if strings.Contains(err.Error(), env) {
				t.Errorf("error %q holds the variable's value", err)
			}
			if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
				t.Error("a bad environment key fell back to a key file")
			}
		})
	}
}

func TestLoadKeyCreatesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, src, err := LoadKey("", dir, nil)
	if err != nil {
		t.Fatalf("LoadKey: %v", err)
	}
	if src != KeyCreated {
		t.Errorf("source %q, want created", src)
	}
	path := filepath.Join(dir, KeyFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("key file mode %v, want -rw-------", fi.Mode())
	}
	text, _ := os.ReadFile(path)
	key, err := ParseKey(string(text))
	if err != nil || sealerID(t, key) != s.KeyID() {
		t.Errorf("the file holds another key or none: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data directory holds %d entries, want the key file alone", len(entries))
	}

	// The next start reads the same key.
	again, src, err := LoadKey("", dir, func() error { t.Error("beforeCreate called with a key file present"); return nil })
	if err != nil || src != KeyFromFile || again.KeyID() != s.KeyID() {
		t.Errorf("second load: %v, source %q, key %s; want file and %s", err, src, again.KeyID(), s.KeyID())
	}
	// The environment wins over the file.
	env, src, err := LoadKey(hex.EncodeToString(testKey), dir, nil)
	if err != nil || src != KeyFromEnv || env.KeyID() != sealerID(t, testKey) {
		t.Errorf("env over file: %v, %q", err, src)
	}
}

func TestLoadKeyFileRefused(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(testKey) + "\n"
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"world readable", good, 0o644, "chmod 600"},
		{"group readable", good, 0o640, "mode 0640"},
		{"group writable", good, 0o620, "owner only"},
		{"short key", base64.StdEncoding.EncodeToString(testKey[:16]), 0o600, "no valid key"},
		{"long key", hex.EncodeToString(append(bytes.Clone(testKey), testKey...)), 0o600, "no valid key"},
		{"empty", "", 0o600, "no valid key"},
		{"raw bytes", string(testKey), 0o600, "no valid key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFile)
			if err := os.WriteFile(path, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			_, _, err := LoadKey("", dir, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadKey: %v; want an error naming %s and saying %q", err, path, tt.want)
			}
			if tt.content != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.content)) {
				t.Errorf("error holds the file's content: %v", err)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Error("the refused file was changed")
			}
		})
	}
	t.Run("a directory", func(t *testing.T) {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, KeyFile), 0o700)
		if _, _, err := LoadKey("", dir, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadKey: %v", err)
		}
	})
}

func TestLoadKeyBeforeCreateStops(t *testing.T) {
	dir := t.TempDir()
	stop := errors.New("not now")
	if _, _, err := LoadKey("", dir, func() error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("LoadKey: %v, want beforeCreate's error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a stopped creation left %d entries", len(entries))
	}
}

// TestCreateKeyFileRace: a key file that appears between the read and the
// link is kept and used, never replaced.
func TestCreateKeyFileRace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFile)
	theirs := base64.StdEncoding.EncodeToString(testKey) + "\n"
	if err := os.WriteFile(path, []byte(theirs), 0o600); err != nil {
		t.Fatal(err)
	}
	key, created, err := createKeyFile(path)
	if err != nil || created || !bytes.Equal(key, testKey) {
		t.Fatalf("createKeyFile over an existing file: created %v, %v; want theirs", created, err)
	}
	if b, _ := os.ReadFile(path); string(b) != theirs {
		t.Error("the existing key file was replaced")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries left, want the key file alone", len(entries))
	}
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	return openStoreAt(t, filepath.Join(t.TempDir(), sqlite.FileName))
}

func openStoreAt(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newTenant makes a tenant and returns a member's context in it.
func newTenant(t *testing.T, st store.Store, name string) context.Context {
	t.Helper()
	tn, _, _, err := auth.CreateTenant(tenancy.System(context.Background()), st, name)
	if err != nil {
		t.Fatal(err)
	}
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
}

// logBuffer is a JSON slog logger into a buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

func TestLoadChecksTheStore(t *testing.T) {
	st := openStore(t)
	ctx := newTenant(t, st, "a")
	dir := t.TempDir()
	log, logs := logBuffer()

	s, err := Load(context.Background(), st, "", dir, log)
	if err != nil {
		t.Fatalf("first Load: %v", err)
	}
	if !strings.Contains(logs.String(), "created the secrets master key") || !strings.Contains(logs.String(), s.KeyID()) {
		t.Errorf("first start's log: %s", logs)
	}
	if _, err := New(Config{}, st, s, events.New(st, events.Config{}), log).Create(ctx, Spec{Name: "KEPT"}, NewValue([]byte("v"))); err != nil {
		t.Fatal(err)
	}

	// The key file is lost: no new key over stored secrets.
	path := filepath.Join(dir, KeyFile)
	saved, _ := os.ReadFile(path)
	os.Remove(path)
	_, err = Load(context.Background(), st, "", dir, log)
	if err == nil || !strings.Contains(err.Error(), "1 secrets") || !strings.Contains(err.Error(), KeyEnv) {
		t.Fatalf("Load without the key file: %v; want a refusal naming the stored secret and %s", err, KeyEnv)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("Load made a new key file over stored secrets")
	}

	// Another key from the environment starts, with a warning.
	logs.Reset()
	other, err := Load(context.Background(), st, hex.EncodeToString(testKey), dir, log)
	if err != nil {
		t.Fatalf("Load with another key: %v", err)
	}
	if !strings.Contains(logs.String(), "another master key") || !strings.Contains(logs.String(), s.KeyID()) {
		t.Errorf("no warning about the other key: %s", logs)
	}
	if strings.Contains(logs.String(), hex.EncodeToString(testKey)) || strings.Contains(logs.String(), strings.TrimSpace(string(saved))) {
		t.Error("the log holds a key")
	}
	_, err = New(Config{}, st, other, events.New(st, events.Config{}), log).Reveal(ctx, "KEPT")
	if !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), s.KeyID()) {
		t.Errorf("Reveal with the wrong key: %v; want ErrOpen naming the sealing key", err)
	}

	// The restored file works again, without a warning.
	os.WriteFile(path, saved, 0o600)
	logs.Reset()
	back, err := Load(context.Background(), st, "", dir, log)
	if err != nil || back.KeyID() != s.KeyID() || strings.Contains(logs.String(), "another master key") {
		t.Errorf("restored key: %v, %s", err, logs)
	}
}
