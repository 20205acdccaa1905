package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestE2BAcrossNodes: the E2B layer of node b serves a sandbox node a
// runs as a's own would: a control call (connect, which gives the envd
// token), envd's file routes on b's API and on the sandbox's envd host,
// a Connect call of envd's filesystem service, a create (placed on a, as
// the API's are) and a kill; what reaches a carries no API key.
func TestE2BAcrossNodes(t *testing.T) {
	f := startFleet(t, nil)
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	sb, err := viaA.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil || sb.Node != "a" {
		t.Fatalf("create on a: %+v, %v", sb, err)
	}
	t.Cleanup(func() { viaA.DeleteSandbox(ctx, sb.ID) })
	b := "http://" + f.b.Addr().String()
	do := func(method, url, host string, body io.Reader, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}

	code, out := do("POST", b+"/e2b/sandboxes/"+sb.ID+"/connect", "", strings.NewReader(`{"timeout": 600}`), map[string]string{"X-API-KEY": f.admin, "Content-Type": "application/json"})
	var conn struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if err := json.Unmarshal(out, &conn); (code != 200 && code != 201) || err != nil || conn.EnvdAccessToken == "" {
		t.Fatalf("connect through b: %d %s", code, out)
	}
	envd := map[string]string{"X-Access-Token": conn.EnvdAccessToken, "E2b-Sandbox-Id": sb.ID,
		"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"))}

	// Upload through b's API; the file is in a's sandbox.
	up := map[string]string{"Content-Type": "application/octet-stream"}
	for k, v := range envd {
		up[k] = v
	}
	if code, out := do("POST", b+"/e2b/envd/files?path=e2b.txt", "", strings.NewReader("made through b"), up); code != 200 {
		t.Fatalf("upload through b: %d %s", code, out)
	}
	rc, err := viaA.ReadFile(ctx, sb.ID, "e2b.txt")
	if err != nil {
		t.Fatalf("the file uploaded through b, read on a: %v", err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "made through b" {
		t.Fatalf("on a: %q", got)
	}
	// Download on the sandbox's envd host, as the SDK calls it without
	// E2B_SANDBOX_URL, through b.
	host := "49983-" + sb.ID + ".localhost"
	if code, out := do("GET", b+"/files?path=e2b.txt", host, nil, envd); code != 200 || string(out) != "made through b" {
		t.Fatalf("download on the envd host through b: %d %q", code, out)
	}
	// A Connect call (JSON) of envd's filesystem service.
	rpc := map[string]string{"Content-Type": "application/json"}
	for k, v := range envd {
		rpc[k] = v
	}
	code, out = do("POST", b+"/e2b/envd/filesystem.Filesystem/Stat", "", strings.NewReader(`{"path":"e2b.txt"}`), rpc)
	if code != 200 || !strings.Contains(string(out), "e2b.txt") {
		t.Fatalf("Stat through b: %d %s", code, out)
	}

	// A create through b is placed, as the API's: on a, the most room.
	code, out = do("POST", b+"/e2b/sandboxes", "", strings.NewReader(`{"templateID": "base", "timeout": 600}`), map[string]string{"X-API-KEY": f.admin, "Content-Type": "application/json"})
	var made struct {
		SandboxID string `json:"sandboxID"`
	}
	if err := json.Unmarshal(out, &made); code != 201 || err != nil || made.SandboxID == "" {
		t.Fatalf("E2B create through b: %d %s", code, out)
	}
	t.Cleanup(func() { viaA.DeleteSandbox(ctx, made.SandboxID) })
	if placed, err := viaA.GetSandbox(ctx, made.SandboxID); err != nil || placed.Node != "a" {
		t.Fatalf("the E2B create through b: %+v, %v; want it placed on a", placed, err)
	}

	if strings.Contains(f.tap.saw(), f.admin) {
		t.Fatal("the API key went from b to a")
	}

	if code, out := do("DELETE", b+"/e2b/sandboxes/"+sb.ID, "", nil, map[string]string{"X-API-KEY": f.admin}); code != 204 {
		t.Fatalf("kill through b: %d %s", code, out)
	}
	after, err := viaA.GetSandbox(ctx, sb.ID)
	if err != nil || (after.State != api.StateDestroyed && after.State != api.StateDestroying) {
		t.Fatalf("killed through b, on a: %+v, %v", after, err)
	}
}
