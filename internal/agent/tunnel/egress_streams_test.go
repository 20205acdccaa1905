package tunnel

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestEgressStreams: a waiting GET /egress is answered only once the
// forwarder takes it, and then carries bytes both ways; a Dial with no
// stream waiting fails when its context ends; a request that is no
// upgrade is refused.
func TestEgressStreams(t *testing.T) {
	e := NewEgressStreams(slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	e.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := e.Dial(ctx); err == nil {
		t.Error("Dial with no stream waiting succeeded")
	}
	cancel()

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /egress HTTP/1.1\r\nHost: agent\r\nConnection: Upgrade\r\nUpgrade: "+TunnelProtocol+"\r\n\r\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the stream was answered before the forwarder took it")
	}
	c.SetReadDeadline(time.Time{})

	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	up, err := e.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the stream's answer: %v, %v", resp, err)
	}
	io.WriteString(up, "from the sandbox")
	buf := make([]byte, len("from the sandbox"))
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "from the sandbox" {
		t.Fatalf("the control plane read %q, %v", buf, err)
	}
	io.WriteString(c, "to the sandbox")
	buf = make([]byte, len("to the sandbox"))
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "to the sandbox" {
		t.Fatalf("the sandbox read %q, %v", buf, err)
	}

	resp, err = http.Get(srv.URL + "/egress")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "upgrade_required") {
		t.Errorf("a GET /egress without an upgrade: %d %s", resp.StatusCode, body)
	}
}
