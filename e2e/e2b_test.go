package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	fspb "github.com/hutchdev/hutch/internal/edge/e2b/envdpb/filesystem"
	"github.com/hutchdev/hutch/internal/edge/e2b/envdpb/filesystem/filesystemconnect"
)

// TestE2BCompat runs the unmodified E2B SDK (e2e/e2b, e2b@2.51.0) against
// a real hutch: every method docs/E2B.md marks as working.
func TestE2BCompat(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("e2b/node_modules/e2b"); err != nil {
		t.Skip("the E2B SDK is not installed: run npm ci in e2e/e2b (CI does)")
	}
	s := startServer(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "compat.test.mjs")
	cmd.Dir = "e2b"
	cmd.Env = append(os.Environ(), "E2B_API_URL="+s.url+"/e2b", "E2B_SANDBOX_URL="+s.url+"/e2b/envd", "E2B_API_KEY="+s.key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test compat.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	page, err := s.client().ListSandboxes(context.Background(), client.ListOptions{State: api.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sandboxes) > 0 {
		t.Errorf("the script left %d sandboxes running", len(page.Sandboxes))
	}
}

// e2bCall makes one call of E2B's control API (key in X-API-KEY) or of
// envd (token and sandbox in their headers) and returns its status and
// body.
func e2bCall(t *testing.T, s *server, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestE2BAccess: the E2B doors keep hutch's tenancy and roles. Another
// tenant's key finds none of a sandbox, an envd token reaches its own
// sandbox only and dies with its key (so does a URL signed with it), a
// reader key changes nothing, and what hutch cannot honour is refused by
// name.
func TestE2BAccess(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	admin := s.client()
	keyHdr := func(key string) map[string]string { return map[string]string{"X-API-KEY": key} }
	envdHdr := func(sandbox, token string) map[string]string {
		return map[string]string{"E2b-Sandbox-Id": sandbox, "X-Access-Token": token}
	}
	type ref struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	create := func(key string) ref {
		t.Helper()
		code, body := e2bCall(t, s, "POST", "/e2b/v2/sandboxes", keyHdr(key), `{"templateID":"base","timeout":300}`)
		if code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
		var r ref
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.SandboxID == "" || r.EnvdAccessToken == "" {
			t.Fatalf("create answered %s (%v)", body, err)
		}
		// Destroyed with the key that made it: the admin's key does not
		// see another tenant's sandboxes (and the harness destroys only
		// the admin's), and the admin's, for a key revoked since.
		t.Cleanup(func() {
			if err := client.New(s.url, key).DeleteSandbox(context.Background(), r.SandboxID); err != nil {
				if err := admin.DeleteSandbox(context.Background(), r.SandboxID); err != nil {
					t.Errorf("destroy %s: %v", r.SandboxID, err)
				}
			}
		})
		return r
	}
	list := "/e2b/envd/process.Process/List"

	ours := create(s.key)
	if code, body := e2bCall(t, s, "POST", list, envdHdr(ours.SandboxID, ours.EnvdAccessToken), "{}"); code != 200 {
		t.Fatalf("envd List with the sandbox's own token: %d %s", code, body)
	}

	// Another tenant: nothing of ours, by any door.
	acme, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	theirKey := acme.Key.Secret
	for _, c := range []struct{ method, path string }{
		{"GET", "/e2b/sandboxes/" + ours.SandboxID},
		{"DELETE", "/e2b/sandboxes/" + ours.SandboxID},
		{"POST", "/e2b/v2/sandboxes/" + ours.SandboxID + "/connect"},
		{"POST", "/e2b/sandboxes/" + ours.SandboxID + "/timeout"},
		{"POST", "/e2b/sandboxes/" + ours.SandboxID + "/pause"},
		{"POST", "/e2b/sandboxes/" + ours.SandboxID + "/fork"},
	} {
		if code, body := e2bCall(t, s, c.method, c.path, keyHdr(theirKey), `{"timeout":60}`); code != http.StatusNotFound {
			t.Errorf("acme's %s %s: %d %s, want 404", c.method, c.path, code, body)
		}
	}
	if code, body := e2bCall(t, s, "GET", "/e2b/v2/sandboxes", keyHdr(theirKey), ""); code != 200 || strings.Contains(body, ours.SandboxID) {
		t.Errorf("acme's list: %d %s", code, body)
	}
	theirs := create(theirKey)
	// A token is its sandbox's: ours does not open theirs, nor theirs ours.
	for _, c := range []struct{ sandbox, token string }{
		{theirs.SandboxID, ours.EnvdAccessToken},
		{ours.SandboxID, theirs.EnvdAccessToken},
		{ours.SandboxID, ""},
		{ours.SandboxID, "garbage"},
		{"", ours.EnvdAccessToken},
	} {
		if code, body := e2bCall(t, s, "POST", list, envdHdr(c.sandbox, c.token), "{}"); code != http.StatusUnauthorized {
			t.Errorf("envd List of %q with token %.12q…: %d %s, want 401", c.sandbox, c.token, code, body)
		}
	}

	// A reader key reads and changes nothing.
	reader, err := admin.CreateKey(ctx, api.CreateKeyRequest{Name: "reader", Role: api.RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := e2bCall(t, s, "POST", "/e2b/v2/sandboxes", keyHdr(reader.Secret), `{"templateID":"base"}`); code != http.StatusForbidden {
		t.Errorf("create with a reader key: %d %s, want 403", code, body)
	}
	code, body := e2bCall(t, s, "GET", "/e2b/sandboxes/"+ours.SandboxID, keyHdr(reader.Secret), "")
	if code != 200 {
		t.Fatalf("GET with a reader key: %d %s", code, body)
	}
	var detail ref
	if err := json.Unmarshal([]byte(body), &detail); err != nil {
		t.Fatal(err)
	}
	readerHdr := envdHdr(ours.SandboxID, detail.EnvdAccessToken)
	if code, body := e2bCall(t, s, "POST", list, readerHdr, "{}"); code != 200 {
		t.Errorf("envd List with a reader's token: %d %s", code, body)
	}
	// Refused at the door, before the stream's first frame is read.
	readerHdr["Content-Type"] = "application/connect+json"
	if code, body := e2bCall(t, s, "POST", "/e2b/envd/process.Process/Start", readerHdr, ""); code != http.StatusForbidden {
		t.Errorf("envd Start with a reader's token: %d %s, want 403", code, body)
	}

	// A token dies with the key it names.
	member, err := admin.CreateKey(ctx, api.CreateKeyRequest{Name: "doomed", Role: api.RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	doomed := create(member.Secret)
	if code, body := e2bCall(t, s, "POST", list, envdHdr(doomed.SandboxID, doomed.EnvdAccessToken), "{}"); code != 200 {
		t.Fatalf("envd List before the revocation: %d %s", code, body)
	}
	upload := envdHdr(doomed.SandboxID, doomed.EnvdAccessToken)
	upload["Content-Type"] = "application/octet-stream"
	if code, body := e2bCall(t, s, "POST", "/e2b/envd/files?path=/tmp/signed.txt", upload, "hello"); code != 200 {
		t.Fatalf("upload: %d %s", code, body)
	}
	// A download URL signed with the token, as the SDK signs it.
	sum := sha256.Sum256([]byte("/tmp/signed.txt:read::" + doomed.EnvdAccessToken))
	signedURL := "/e2b/envd/files?" + url.Values{"path": {"/tmp/signed.txt"}, "signature": {"v1_" + base64.RawStdEncoding.EncodeToString(sum[:])}}.Encode()
	sandboxHdr := map[string]string{"E2b-Sandbox-Id": doomed.SandboxID}
	if code, body := e2bCall(t, s, "GET", signedURL, sandboxHdr, ""); code != 200 || body != "hello" {
		t.Fatalf("signed download before the revocation: %d %s", code, body)
	}
	if err := admin.DeleteKey(ctx, member.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := e2bCall(t, s, "POST", list, envdHdr(doomed.SandboxID, doomed.EnvdAccessToken), "{}"); code != http.StatusUnauthorized {
		t.Errorf("envd List after the key's revocation: %d %s, want 401", code, body)
	}
	if code, body := e2bCall(t, s, "GET", signedURL, sandboxHdr, ""); code != http.StatusUnauthorized {
		t.Errorf("signed download after the key's revocation: %d %s, want 401", code, body)
	}

	// What hutch cannot honour is refused by name, and nothing is made.
	before, err := admin.ListSandboxes(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"templateID":"base","timeout":-5}`, http.StatusBadRequest},
		{`{"templateID":"no-such-template"}`, http.StatusBadRequest},
		{`{"templateID":"base","mcp":{"x":{}}}`, http.StatusNotImplemented},
		{`{"templateID":"base","network":{"denyOut":["10.0.0.0/8"]}}`, http.StatusNotImplemented},
		{`{"templateID":`, http.StatusBadRequest},
	} {
		code, body := e2bCall(t, s, "POST", "/e2b/v2/sandboxes", keyHdr(s.key), c.body)
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || e.Code != code || e.Message == "" {
			t.Errorf("create %s: %d %s, want %d with E2B's error body", c.body, code, body, c.code)
		}
	}
	after, err := admin.ListSandboxes(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Sandboxes) != len(before.Sandboxes) {
		t.Errorf("refused creates left sandboxes: %d before, %d after", len(before.Sandboxes), len(after.Sandboxes))
	}
	if code, _ := e2bCall(t, s, "GET", "/e2b/v2/sandboxes", nil, ""); code != http.StatusUnauthorized {
		t.Errorf("list without a key: %d, want 401", code)
	}
}

// TestE2BPolledWatchers: envd's polled watchers (the Python SDK's
// synchronous watch_dir) through the Connect client protoc generates,
// binary protobuf: events between polls, the watcher the caller's own,
// gone once removed.
func TestE2BPolledWatchers(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	code, body := e2bCall(t, s, "POST", "/e2b/v2/sandboxes", map[string]string{"X-API-KEY": s.key}, `{"templateID":"base"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var sb struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if err := json.Unmarshal([]byte(body), &sb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client().DeleteSandbox(context.Background(), sb.SandboxID) })
	fs := filesystemconnect.NewFilesystemClient(http.DefaultClient, s.url+"/e2b/envd")
	req := func(sandbox, token string) http.Header {
		return http.Header{"E2b-Sandbox-Id": {sandbox}, "X-Access-Token": {token}}
	}
	withHdr := func(r interface{ Header() http.Header }, h http.Header) {
		for k, v := range h {
			r.Header()[k] = v
		}
	}
	mk := connect.NewRequest(&fspb.MakeDirRequest{Path: "/workspace/polled"})
	withHdr(mk, req(sb.SandboxID, sb.EnvdAccessToken))
	if _, err := fs.MakeDir(ctx, mk); err != nil {
		t.Fatal(err)
	}
	cw := connect.NewRequest(&fspb.CreateWatcherRequest{Path: "/workspace/polled"})
	withHdr(cw, req(sb.SandboxID, sb.EnvdAccessToken))
	w, err := fs.CreateWatcher(ctx, cw)
	if err != nil {
		t.Fatal(err)
	}
	id := w.Msg.GetWatcherId()
	if code, body := e2bCall(t, s, "POST", "/e2b/envd/files?path=/workspace/polled/new.txt", map[string]string{
		"E2b-Sandbox-Id": sb.SandboxID, "X-Access-Token": sb.EnvdAccessToken, "Content-Type": "application/octet-stream"}, "hello"); code != 200 {
		t.Fatalf("upload: %d %s", code, body)
	}
	var names []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		get := connect.NewRequest(&fspb.GetWatcherEventsRequest{WatcherId: id})
		withHdr(get, req(sb.SandboxID, sb.EnvdAccessToken))
		res, err := fs.GetWatcherEvents(ctx, get)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range res.Msg.GetEvents() {
			names = append(names, ev.GetType().String()+" "+ev.GetName())
		}
		if len(names) > 0 {
			break
		}
	}
	if len(names) == 0 || names[0] != "EVENT_TYPE_CREATE new.txt" {
		t.Fatalf("events %v, want the create of new.txt first", names)
	}

	// Another sandbox's token does not reach it, and once removed it is gone.
	code, body = e2bCall(t, s, "POST", "/e2b/v2/sandboxes", map[string]string{"X-API-KEY": s.key}, `{"templateID":"base"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var other struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if err := json.Unmarshal([]byte(body), &other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client().DeleteSandbox(context.Background(), other.SandboxID) })
	get := connect.NewRequest(&fspb.GetWatcherEventsRequest{WatcherId: id})
	withHdr(get, req(other.SandboxID, other.EnvdAccessToken))
	if _, err := fs.GetWatcherEvents(ctx, get); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("another sandbox's poll of the watcher: %v, want not_found", err)
	}
	rm := connect.NewRequest(&fspb.RemoveWatcherRequest{WatcherId: id})
	withHdr(rm, req(sb.SandboxID, sb.EnvdAccessToken))
	if _, err := fs.RemoveWatcher(ctx, rm); err != nil {
		t.Fatal(err)
	}
	get = connect.NewRequest(&fspb.GetWatcherEventsRequest{WatcherId: id})
	withHdr(get, req(sb.SandboxID, sb.EnvdAccessToken))
	if _, err := fs.GetWatcherEvents(ctx, get); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("a poll after removal: %v, want not_found", err)
	}
}

// TestE2BBrowserCORS: a page of another origin in headless Chromium
// creates a sandbox through the control API, calls its envd and kills it,
// through the browser's own CORS checks, as the E2B SDK does in a browser.
func TestE2BBrowserCORS(t *testing.T) {
	node, chromium := needBrowser(t)
	s := startServer(t, "")
	for range 2 { // a next page to read x-next-token from
		if _, err := s.client().CreateSandbox(context.Background(), api.CreateSandboxRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "<!doctype html><title>another origin</title>")
	}))
	defer page.Close()
	cmd := exec.CommandContext(ctx, node, "e2b-cors.mjs", s.url, s.key, page.URL)
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node e2b-cors.mjs: %v\n%s%s", err, out, stderr.String())
	}
	var got struct {
		Origin    string `json:"origin"`
		Create    int    `json:"create"`
		List      int    `json:"list"`
		ListBody  string `json:"listBody"`
		NextToken string `json:"nextToken"`
		Kill      int    `json:"kill"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if got.Origin != page.URL || got.Create != http.StatusCreated || got.List != http.StatusOK || got.Kill != http.StatusNoContent || got.NextToken == "" {
		t.Errorf("from the page: %+v", got)
	}
}
