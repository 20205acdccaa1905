package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// fullLog keeps every line a server wrote to stderr, for leak checks
// (server.stderr keeps only the last 50).
type fullLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fullLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(line)
	l.buf.WriteByte('\n')
}

func (l *fullLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startLoggedServer is startServer with extra environment variables for
// hutch serve (and no secrets key from the test's), keeping the whole of
// its stderr.
func startLoggedServer(t *testing.T, dataDir string, env []string, args ...string) (*server, *fullLog) {
	t.Helper()
	return launch(t, nil, dataDir, append([]string{"HUTCH_SECRETS_KEY="}, env...), args...)
}

// serveFails runs hutch serve expecting it to refuse to start, and returns
// its stderr.
func serveFails(t *testing.T, dataDir string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "hutch"), "serve", "--listen", "127.0.0.1:0", "--data", dataDir)
	cmd.Env = append(append(os.Environ(), "HUTCH_SECRETS_KEY="), env...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("hutch serve: %v, want exit status 1\n%s", err, errb.String())
	}
	return errb.String()
}

// rawDo sends a request with key and returns the status and body.
func rawDo(t *testing.T, s *server, key, method, path, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	resp := s.do(method, path, key, r)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestSecrets: the secret routes through the real binary, and the leak
// test: a recognisable value appears in no answer, log line, event, error
// message or database file.
func TestSecrets(t *testing.T) {
	s, logs := startLoggedServer(t, "", nil, "--log-level", "debug")
	ctx := context.Background()
	const value = "hutch-LEAK-CANARY-8c1f5a2e9b"
	rotated := value + "-ROTATED"
	const theirs = "hutch-OTHER-TENANT-CANARY-3d7e"
	var answers []string // every body the server sent
	do := func(key, method, path, body string, wantStatus int, wantCode string) string {
		t.Helper()
		status, b := rawDo(t, s, key, method, path, body)
		answers = append(answers, b)
		if status != wantStatus {
			t.Errorf("%s %s: %d %s, want %d", method, path, status, b, wantStatus)
		}
		if wantCode != "" {
			var e api.Error
			if json.Unmarshal([]byte(b), &e); e.Error.Code != wantCode {
				t.Errorf("%s %s: %s, want code %q", method, path, b, wantCode)
			}
		}
		return b
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	b := do("", "POST", "/v1/secrets", js(map[string]any{"name": "OPENAI_API_KEY", "description": "upstream key", "value": value}), 201, "")
	var created api.Secret
	if err := json.Unmarshal([]byte(b), &created); err != nil || created.ValueBytes != len(value) || created.Name != "OPENAI_API_KEY" {
		t.Fatalf("created %s: %v", b, err)
	}
	b = do("", "GET", "/v1/secrets", "", 200, "")
	if !strings.Contains(b, `"OPENAI_API_KEY"`) || strings.Contains(b, `"value"`) {
		t.Errorf("list = %s; want the name and no value field", b)
	}
	b = do("", "GET", "/v1/secrets/OPENAI_API_KEY", "", 200, "")
	if !strings.Contains(b, `"upstream key"`) || strings.Contains(b, `"value"`) {
		t.Errorf("get = %s", b)
	}
	b = do("", "PUT", "/v1/secrets/OPENAI_API_KEY", js(map[string]any{"value": rotated}), 200, "")
	var replaced api.Secret
	if json.Unmarshal([]byte(b), &replaced); replaced.ValueBytes != len(rotated) || replaced.Description != "upstream key" {
		t.Errorf("replaced = %s", b)
	}

	// Failed requests carrying the value: their answers must not echo it.
	do("", "POST", "/v1/secrets", js(map[string]any{"name": "OPENAI_API_KEY", "value": value}), 409, "secret_exists")
	do("", "POST", "/v1/secrets", js(map[string]any{"name": "bad/name", "value": value}), 400, "invalid_secret_name")
	do("", "POST", "/v1/secrets", js(map[string]any{"name": "-flag", "value": value}), 400, "invalid_secret_name")
	do("", "POST", "/v1/secrets", js(map[string]any{"name": "BIG", "value": value + strings.Repeat("x", 64<<10)}), 413, "secret_too_large")
	do("", "POST", "/v1/secrets", `{"name":"N","value":"`+value+`"`, 400, "invalid_json")
	do("", "POST", "/v1/secrets", `{"name":"N","value":"`+value+`","extra":"`+value+`"}`, 400, "unknown_field")
	do("", "PUT", "/v1/secrets/MISSING", js(map[string]any{"value": value}), 404, "secret_not_found")
	do("hk_bogus_key", "POST", "/v1/secrets", js(map[string]any{"name": "N", "value": value}), 401, "")

	// Another tenant sees nothing of it.
	admin := s.client()
	tenant, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	other := tenant.Key.Secret
	do(other, "GET", "/v1/secrets/OPENAI_API_KEY", "", 404, "secret_not_found")
	do(other, "PUT", "/v1/secrets/OPENAI_API_KEY", js(map[string]any{"value": value}), 404, "secret_not_found")
	do(other, "DELETE", "/v1/secrets/OPENAI_API_KEY", "", 404, "secret_not_found")
	if b := do(other, "GET", "/v1/secrets", "", 200, ""); strings.Contains(b, "OPENAI_API_KEY") {
		t.Errorf("the other tenant lists %s", b)
	}

	// The Go client and the CLI.
	oc := client.New(s.url, other)
	if _, err := oc.CreateSecret(ctx, api.CreateSecretRequest{Name: "OPENAI_API_KEY", Value: theirs}); err != nil {
		t.Errorf("the other tenant uses the same name: %v", err)
	}
	if _, err := admin.CreateSecret(ctx, api.CreateSecretRequest{Name: "OPENAI_API_KEY", Value: value}); client.Code(err) != "secret_exists" || strings.Contains(err.Error(), value) {
		t.Errorf("client duplicate: %v", err)
	}
	out, errOut, code := s.cli(value+"\n", "secret", "set", "CLI_TOKEN", "--description", "from the CLI")
	if code != 0 || out != "CLI_TOKEN\n" || !strings.Contains(errOut, "created ("+strconv.Itoa(len(value))+" bytes)") {
		t.Errorf("secret set: %d %q %q", code, out, errOut)
	}
	out, errOut, code = s.cli(rotated, "secret", "set", "CLI_TOKEN")
	if code != 0 || !strings.Contains(errOut, "replaced ("+strconv.Itoa(len(rotated))+" bytes)") {
		t.Errorf("secret set over an existing one: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := s.cli("", "secret", "set", "EMPTY"); code != 1 || !strings.Contains(errOut, "no value") {
		t.Errorf("secret set without a value: %d %q", code, errOut)
	}
	if _, errOut, code := s.cli("", "secret", "set", "ARGV", value); code != 2 || strings.Contains(errOut, value) {
		t.Errorf("secret set with the value in argv: %d %q; want a usage error that does not repeat it", code, errOut)
	}
	out, _, code = s.cli("", "secret", "ls")
	if code != 0 || !strings.Contains(out, "CLI_TOKEN") || !strings.Contains(out, "from the CLI") || !strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("secret ls = %d %q", code, out)
	}
	answers = append(answers, out)
	out, _, code = s.cli("", "secret", "ls", "--json")
	var listed []api.Secret
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 2 {
		t.Errorf("secret ls --json = %d %q %v", code, out, err)
	}
	answers = append(answers, out)
	if out, _, code := s.cli("", "secret", "rm", "CLI_TOKEN"); code != 0 || out != "CLI_TOKEN\n" {
		t.Errorf("secret rm = %d %q", code, out)
	}
	if _, errOut, code := s.cli("", "secret", "rm", "CLI_TOKEN"); code != 1 || !strings.Contains(errOut, "secret_not_found") {
		t.Errorf("second secret rm = %d %q", code, errOut)
	}
	// A registry password is bound to its host, which never changes; an
	// env secret never becomes one.
	if _, errOut, code := s.cli(value, "secret", "set", "HUB", "--registry", "docker.io"); code != 0 || !strings.Contains(errOut, "a registry password for index.docker.io") {
		t.Errorf("secret set --registry: %d %q", code, errOut)
	}
	if _, errOut, code := s.cli(rotated, "secret", "set", "HUB", "--registry", "Docker.io:443"); code != 0 || !strings.Contains(errOut, "replaced") {
		t.Errorf("secret set --registry over it, the same host spelt otherwise: %d %q", code, errOut)
	}
	if _, errOut, code := s.cli(value, "secret", "set", "HUB", "--registry", "ghcr.io"); code != 1 || !strings.Contains(errOut, "a host cannot change") {
		t.Errorf("secret set --registry with another host: %d %q", code, errOut)
	}
	if _, errOut, code := s.cli(value, "secret", "set", "OPENAI_API_KEY", "--registry", "ghcr.io"); code != 1 || !strings.Contains(errOut, "not a registry secret") {
		t.Errorf("secret set --registry over an env secret: %d %q", code, errOut)
	}
	if out, _, code := s.cli("", "secret", "ls"); code != 0 || !regexp.MustCompile(`HUB\s+registry\s+index\.docker\.io`).MatchString(out) {
		t.Errorf("secret ls does not show HUB's kind and host: %d %q", code, out)
	}
	if _, _, code := s.cli("", "secret", "rm", "HUB"); code != 0 {
		t.Errorf("secret rm HUB = %d", code)
	}

	do("", "DELETE", "/v1/secrets/OPENAI_API_KEY", "", 204, "")
	do("", "GET", "/v1/secrets/OPENAI_API_KEY", "", 404, "secret_not_found")
	// A last one stays, so the database holds a live ciphertext too.
	do("", "POST", "/v1/secrets", js(map[string]any{"name": "KEPT", "value": value}), 201, "")

	// Events: created, updated, deleted, naming the secret, never its value.
	evs, err := admin.Events(ctx, client.EventQuery{Types: []string{api.EventSecretCreated, api.EventSecretUpdated, api.EventSecretDeleted}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs.Events {
		types = append(types, e.Type+" "+e.Data["name"].(string))
	}
	wantTypes := "secret.created OPENAI_API_KEY,secret.updated OPENAI_API_KEY,secret.created CLI_TOKEN,secret.updated CLI_TOKEN," +
		"secret.deleted CLI_TOKEN,secret.created HUB,secret.updated HUB,secret.deleted HUB,secret.deleted OPENAI_API_KEY,secret.created KEPT"
	if strings.Join(types, ",") != wantTypes {
		t.Errorf("events %v\nwant %s", types, wantTypes)
	}
	all, err := admin.Events(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, js(all))

	s.stop(true) // flush the database and the log

	for _, v := range []string{value, rotated, theirs} {
		for _, a := range answers {
			if strings.Contains(a, v) {
				t.Errorf("an answer holds a value: %s", a)
			}
		}
		if strings.Contains(logs.String(), v) {
			t.Errorf("the server's log holds a value:\n%s", logs)
		}
	}
	if !strings.Contains(logs.String(), `"path":"/v1/secrets"`) {
		t.Error("the debug log shows no secret request: the log check looked at nothing")
	}
	// Every file of the data directory, the database and its WAL included.
	files := 0
	err = filepath.WalkDir(s.dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, v := range []string{value, rotated, theirs} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a value", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Errorf("read %d files in the data directory; want at least the database, admin.key and secrets.key", files)
	}
	db, err := os.ReadFile(filepath.Join(s.dataDir, "hutch.db"))
	if err != nil || !bytes.Contains(db, []byte("KEPT")) {
		t.Errorf("the database does not hold the secret's name, so the raw check proves nothing: %v", err)
	}
}

// TestSecretsKey: the master key from the environment or the key file, and
// the starts refused.
func TestSecretsKey(t *testing.T) {
	key := bytes.Repeat([]byte{7, 1}, 16)
	b64 := "HUTCH_SECRETS_KEY=" + base64.StdEncoding.EncodeToString(key)

	t.Run("bad environment", func(t *testing.T) {
		dir := testutil.DataDir(t)
		errOut := serveFails(t, dir, "HUTCH_SECRETS_KEY=not-a-key")
		if !strings.Contains(errOut, "HUTCH_SECRETS_KEY") || !strings.Contains(errOut, "base64") || strings.Contains(errOut, "not-a-key") {
			t.Errorf("stderr %q: want a message naming the variable and the format, not its value", errOut)
		}
		short := base64.StdEncoding.EncodeToString(key[:16])
		if errOut := serveFails(t, dir, "HUTCH_SECRETS_KEY="+short); !strings.Contains(errOut, "32") || strings.Contains(errOut, short) {
			t.Errorf("16-byte key: %q", errOut)
		}
	})

	t.Run("key file", func(t *testing.T) {
		dir := testutil.DataDir(t)
		s, _ := startLoggedServer(t, dir, nil)
		path := filepath.Join(dir, "secrets.key")
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
		}
		if _, err := s.client().CreateSecret(context.Background(), api.CreateSecretRequest{Name: "S", Value: "v"}); err != nil {
			t.Fatal(err)
		}
		s.stop(true)

		// Readable by others: refused, and left as it was.
		os.Chmod(path, 0o644)
		if errOut := serveFails(t, dir); !strings.Contains(errOut, path) || !strings.Contains(errOut, "chmod 600") {
			t.Errorf("0644 key file: %q", errOut)
		}
		os.Chmod(path, 0o600)
		saved, _ := os.ReadFile(path)
		os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key[:16])+"\n"), 0o600)
		if errOut := serveFails(t, dir); !strings.Contains(errOut, "no valid key") {
			t.Errorf("short key file: %q", errOut)
		}
		// Gone while secrets are stored: no new key over them.
		os.Remove(path)
		if errOut := serveFails(t, dir); !strings.Contains(errOut, "missing") || !strings.Contains(errOut, "1 secrets") {
			t.Errorf("missing key file: %q", errOut)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Error("a new key file was made over stored secrets")
		}
		// Another key from the environment starts, and says so.
		_, logs := startLoggedServer(t, dir, []string{b64})
		if !strings.Contains(logs.String(), "another master key") {
			t.Errorf("no warning about secrets sealed with another key:\n%s", logs)
		}
		// The restored file opens them again.
		os.WriteFile(path, saved, 0o600)
		_, logs = startLoggedServer(t, dir, nil)
		if strings.Contains(logs.String(), "another master key") || !strings.Contains(logs.String(), "read from its file") {
			t.Errorf("restored key file:\n%s", logs)
		}
	})

	t.Run("environment", func(t *testing.T) {
		dir := testutil.DataDir(t)
		s, logs := startLoggedServer(t, dir, []string{"HUTCH_SECRETS_KEY=" + hex.EncodeToString(key)})
		if _, err := os.Stat(filepath.Join(dir, "secrets.key")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a key from the environment made a key file: %v", err)
		}
		if strings.Contains(logs.String(), hex.EncodeToString(key)) || !strings.Contains(logs.String(), "HUTCH_SECRETS_KEY") {
			t.Errorf("log:\n%s", logs)
		}
		c := s.client()
		if _, err := c.CreateSecret(context.Background(), api.CreateSecretRequest{Name: "S", Value: "v"}); err != nil {
			t.Fatal(err)
		}
		// The key stays out of sandboxes.
		sb, err := c.CreateSandbox(context.Background(), api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Exec(context.Background(), sb.ID, api.ExecRequest{Cmd: []string{"env"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("env in a sandbox: %+v, %v", res, err)
		}
		if strings.Contains(res.Stdout, "HUTCH_SECRETS_KEY") || strings.Contains(res.Stdout, hex.EncodeToString(key)) {
			t.Errorf("a sandbox's environment holds the master key:\n%s", res.Stdout)
		}
		s.stop(true)
		// The same key in base64 is the same key: no warning.
		_, logs = startLoggedServer(t, dir, []string{b64})
		if strings.Contains(logs.String(), "another master key") {
			t.Errorf("the same key in base64 is taken for another:\n%s", logs)
		}
		if strings.Contains(logs.String(), base64.StdEncoding.EncodeToString(key)) {
			t.Error("the log holds the key")
		}
	})
}
