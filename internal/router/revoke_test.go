package router

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestRouterKeyRevoked: a private preview's WebSocket that an API key let
// in ends when the key is revoked; one another key let in goes on.
func TestRouterKeyRevoked(t *testing.T) {
	e := newEnv(t)
	addr := e.srv.Listener.Addr().String()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
	}}
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(key string) *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, "ws://"+host(idRunning, appPort)+":"+port+"/ws", &websocket.DialOptions{HTTPClient: hc,
			HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	echo := func(c *websocket.Conn) error {
		if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
			return err
		}
		_, _, err := c.Read(ctx)
		return err
	}
	revoked, kept := dial(keyA), dial(keyA2)
	for _, c := range []*websocket.Conn{revoked, kept} {
		if err := echo(c); err != nil {
			t.Fatalf("echo before the revocation: %v", err)
		}
	}

	e.sessions.revoke("aaaa")
	ended := make(chan error, 1)
	go func() {
		_, _, err := revoked.Read(ctx)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the revoked key's WebSocket read a message")
		}
	case <-time.After(10 * time.Second): // a hang detector: it ends at once
		t.Fatal("the revoked key's WebSocket outlived its revocation")
	}
	if err := echo(kept); err != nil {
		t.Errorf("another key's WebSocket after the revocation: %v", err)
	}
}
