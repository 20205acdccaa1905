package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// TestBadInput: each malformed request gets its 4xx and stable code in the
// one error shape, and leaves nothing behind.
func TestBadInput(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	sb, err := s.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := s.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client().StopSandbox(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	big := `{"labels":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`
	files := "/v1/sandboxes/" + sb.ID + "/files"
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"malformed json", "POST", "/v1/sandboxes", "", `{"template":`, 400, "invalid_json"},
		{"not an object", "POST", "/v1/sandboxes", "", `[1,2]`, 400, "invalid_json"},
		{"two values", "POST", "/v1/sandboxes", "", `{} {}`, 400, "invalid_json"},
		{"unknown field", "POST", "/v1/sandboxes", "", `{"templat":"host"}`, 400, "unknown_field"},
		{"absurd memory", "POST", "/v1/sandboxes", "", `{"limits":{"memory_mb":100000000}}`, 400, "invalid_limits"},
		{"negative pids", "POST", "/v1/sandboxes", "", `{"limits":{"pids":-1}}`, 400, "invalid_limits"},
		{"negative timeout", "POST", "/v1/sandboxes", "", `{"timeout_s":-5}`, 400, "invalid_timeout"},
		{"huge timeout", "POST", "/v1/sandboxes", "", `{"timeout_s":999999999}`, 400, "invalid_timeout"},
		{"unknown template", "POST", "/v1/sandboxes", "", `{"template":"windows"}`, 400, "invalid_template"},
		{"bad env name", "POST", "/v1/sandboxes", "", `{"env":{"A=B":"c"}}`, 400, "invalid_env"},
		{"bad label", "POST", "/v1/sandboxes", "", `{"labels":{"no spaces":"x"}}`, 400, "invalid_labels"},
		{"oversized body", "POST", "/v1/sandboxes", "", big, 413, "body_too_large"},
		{"unknown sandbox", "GET", "/v1/sandboxes/01jzzzzzzzzzzzzzzzzzzzzzzz", "", "", 404, "sandbox_not_found"},
		{"garbage id", "DELETE", "/v1/sandboxes/..%2F..%2Fetc", "", "", 404, "sandbox_not_found"},
		{"bad state filter", "GET", "/v1/sandboxes?state=happy", "", "", 400, "invalid_request"},
		{"bad limit", "GET", "/v1/sandboxes?limit=0", "", "", 400, "invalid_request"},
		{"bad cursor", "GET", "/v1/sandboxes?cursor=not-a-cursor", "", "", 400, "invalid_cursor"},
		{"empty cmd", "POST", "/v1/sandboxes/" + sb.ID + "/exec", "", `{"cmd":[]}`, 400, "invalid_cmd"},
		{"nul in cmd", "POST", "/v1/sandboxes/" + sb.ID + "/exec", "", `{"cmd":["echo","a\u0000b"]}`, 400, "invalid_cmd"},
		{"exec when stopped", "POST", "/v1/sandboxes/" + stopped.ID + "/exec", "", `{"cmd":["true"]}`, 409, "sandbox_not_running"},
		{"dotdot path", "GET", files + "?path=../../etc/passwd", "", "", 400, "invalid_path"},
		{"nul path", "GET", files + "?path=a%00b", "", "", 400, "invalid_path"},
		{"empty path", "GET", files + "?path=", "", "", 400, "invalid_path"},
		{"missing file", "GET", files + "?path=nope.txt", "", "", 404, "file_not_found"},
		{"write without parents", "PUT", files + "?path=no/such/dir.txt&parents=false", "", "x", 404, "file_not_found"},
		{"bad parents", "PUT", files + "?path=x.txt&parents=perhaps", "", "x", 400, "invalid_request"},
		{"bad recursive", "DELETE", files + "?path=x&recursive=maybe", "", "", 400, "invalid_request"},
		{"no key", "GET", "/v1/sandboxes", "-", "", 401, "missing_api_key"},
		{"wrong key", "GET", "/v1/sandboxes", "hk_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "", 401, "invalid_api_key"},
		{"not a key", "GET", "/v1/info", "password", "", 401, "invalid_api_key"},
		{"bad role", "POST", "/v1/keys", "", `{"role":"god"}`, 400, "invalid_request"},
		{"unknown key", "DELETE", "/v1/keys/nope", "", "", 404, "key_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp := s.do(tc.method, tc.path, tc.key, body)
			defer resp.Body.Close()
			var e api.Error
			raw, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("body is not the error shape: %q", raw)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
				t.Fatalf("got %d %+v, want %d %s with a message", resp.StatusCode, e.Error, tc.status, tc.code)
			}
		})
	}

	// An absolute path never reaches the host's file: the process driver
	// refuses it, the namespace driver reads the sandbox's own root, where
	// there is no /etc/shadow.
	resp := s.do("GET", files+"?path=/etc/shadow", "", nil)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e api.Error
	if json.Unmarshal(raw, &e) != nil || (e.Error.Code != "path_outside_sandbox" && e.Error.Code != "file_not_found") {
		t.Fatalf("GET /etc/shadow: %d %q, want path_outside_sandbox or file_not_found", resp.StatusCode, raw)
	}

	// A file over the server's limit is refused and not left behind.
	s2 := startServer(t, "", "--max-file-bytes", "1024")
	sb2, err := s2.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	resp = s2.do("PUT", "/v1/sandboxes/"+sb2.ID+"/files?path=big.bin", "", bytes.NewReader(make([]byte, 4096)))
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized file: %d", resp.StatusCode)
	}
	res, err := s2.client().Exec(ctx, sb2.ID, api.ExecRequest{Cmd: []string{"ls", "-A"}})
	if err != nil || res.ExitCode != 0 || strings.Contains(res.Stdout, "big.bin") || strings.Contains(res.Stdout, ".hutch-") {
		t.Fatalf("sandbox holds %q after a refused write (%v)", res.Stdout, err)
	}

	// Failed creates leave no directory behind.
	info, err := s.client().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(s.dataDir, "sandboxes", info.Driver))
	var dirs []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") { // .warm is the warm pool
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 2 {
		t.Fatalf("sandbox directories %v, want the 2 created", dirs)
	}
}
