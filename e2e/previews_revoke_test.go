package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestPreviewKeyRevoked: a signed preview URL, and the cookie it leaves,
// end with the key that minted them, as the key's own requests do: once
// the key is revoked, the URL and the cookie are refused and a WebSocket
// opened through the cookie is closed; a URL another key minted goes on.
func TestPreviewKeyRevoked(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	admin := s.client()
	ctx := context.Background()
	sb, err := admin.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	startApp(t, s, p, sb.ID)
	base := p.base(sb.ID, appPort)
	signed := func(name string) (*api.Key, string) {
		t.Helper()
		k, err := admin.CreateKey(ctx, api.CreateKeyRequest{Name: name, Role: api.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		su, err := client.New(s.url, k.Secret).PreviewURL(ctx, sb.ID, appPort, 0)
		if err != nil {
			t.Fatal(err)
		}
		return k, su.URL
	}
	doomed, doomedURL := signed("doomed")
	_, keptURL := signed("kept")

	resp, body := p.get(doomedURL, nil)
	p.want("the signed URL", resp, body, 200, "")
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == "hutch_preview" {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	if cookie == "" {
		t.Fatalf("no preview cookie in %v", resp.Header["Set-Cookie"])
	}
	fromPage := map[string]string{"Cookie": cookie, "Referer": base + "/"}
	resp, body = p.get(base+"/headers", fromPage)
	p.want("the cookie", resp, body, 200, "")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(wctx, strings.Replace(base, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{
		HTTPClient: p.hc, HTTPHeader: http.Header{"Cookie": {cookie}, "Origin": {base}},
	})
	if err != nil {
		t.Fatalf("WebSocket with the cookie: %v", err)
	}
	defer ws.CloseNow()
	if err := ws.Write(wctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := ws.Read(wctx); err != nil || string(b) != "echo: hi" {
		t.Fatalf("echo: %q, %v", b, err)
	}

	if err := admin.DeleteKey(ctx, doomed.ID); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, _, err := ws.Read(wctx)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the WebSocket read a message after its key's revocation")
		}
	case <-time.After(10 * time.Second):
		t.Error("the WebSocket the revoked key's cookie opened is still open")
	}
	resp, body = p.get(doomedURL, nil)
	p.want("the revoked key's signed URL", resp, body, 401, "invalid_preview_token")
	resp, body = p.get(base+"/headers", fromPage)
	p.want("the revoked key's cookie", resp, body, 401, "preview_private")
	resp, body = p.get(keptURL, nil)
	p.want("another key's signed URL", resp, body, 200, "")
}
