package agent_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agentclient"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// rawClient speaks HTTP to a Unix socket with no signing of its own.
func rawClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	hc := rawClient(f.sock)
	send := func(token, nonce, method, path, sigPath string) (*http.Response, api.Error) {
		t.Helper()
		req, err := http.NewRequest(method, "http://agent"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if nonce != "" {
			req.Header.Set(agentproto.HeaderNonce, nonce)
			req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMAC(token, nonce, method, sigPath))
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.Error
		json.NewDecoder(resp.Body).Decode(&e)
		return resp, e
	}
	nonce := agentproto.NewNonce
	tests := []struct {
		name                   string
		token, nonce           string
		method, path           string
		signMethod, signedPath string
		status                 int
		proof                  bool
	}{
		{"good", testToken, nonce(), "GET", "/health", "GET", "/health", http.StatusOK, true},
		{"wrong token", "wrong-token-wrong-token-wrong-token", nonce(), "GET", "/health", "GET", "/health", http.StatusUnauthorized, true},
		{"signed for another path", testToken, nonce(), "GET", "/files?path=x", "GET", "/health", http.StatusUnauthorized, true},
		{"signed for another method", testToken, nonce(), "POST", "/shutdown", "GET", "/shutdown", http.StatusUnauthorized, true},
		{"no nonce", testToken, "", "GET", "/health", "GET", "/health", http.StatusUnauthorized, false},
		{"short nonce", testToken, "abcd", "GET", "/health", "GET", "/health", http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "http://agent"+tt.path, nil)
			if tt.nonce != "" {
				req.Header.Set(agentproto.HeaderNonce, tt.nonce)
				req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMAC(tt.token, tt.nonce, tt.signMethod, tt.signedPath))
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e api.Error
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == http.StatusUnauthorized && e.Error.Code != "unauthorized" {
				t.Errorf("error %+v, want code unauthorized", e)
			}
			gotProof := resp.Header.Get(agentproto.HeaderProof)
			if tt.proof && gotProof != agentproto.Proof(testToken, tt.nonce) {
				t.Errorf("proof %q, want the agent's proof of the nonce", gotProof)
			}
			if !tt.proof && gotProof != "" {
				t.Errorf("proof %q on a request without a valid nonce", gotProof)
			}
		})
	}

	t.Run("replayed nonce", func(t *testing.T) {
		nonce := agentproto.NewNonce()
		if resp, _ := send(testToken, nonce, "GET", "/health", "/health"); resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: status %d", resp.StatusCode)
		}
		resp, e := send(testToken, nonce, "GET", "/health", "/health")
		if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("replay: status %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
	})

	t.Run("client with the wrong token", func(t *testing.T) {
		c := agentclient.New("unix", f.sock, "wrong-token-wrong-token-wrong-token")
		defer c.Close()
		// The agent answers 401 with its own proof, which this client cannot
		// verify, so it cannot trust even the 401.
		_, err := c.Health(context.Background())
		wantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unverified")
	})

	t.Run("unknown route", func(t *testing.T) {
		resp, e := send(testToken, agentproto.NewNonce(), "POST", "/health", "/health")
		if resp.StatusCode != http.StatusNotFound || e.Error.Code != "unknown_route" {
			t.Errorf("POST /health: status %d %+v, want 404 unknown_route", resp.StatusCode, e)
		}
	})

	t.Run("client with the right token", func(t *testing.T) {
		h, err := f.c.Health(context.Background())
		if err != nil || !h.OK || h.SandboxID != "sb-test" || h.Pid != os.Getpid() {
			t.Errorf("Health = %+v, %v", h, err)
		}
	})
}

// TestImpostor: a server on the agent's socket that does not know the
// token cannot prove itself, and the client refuses its answers.
func TestImpostor(t *testing.T) {
	dir, err := os.MkdirTemp("", "hutch-impostor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tests := []struct {
		name  string
		proof func(nonce string) string
	}{
		{"no proof", func(string) string { return "" }},
		{"proof with another token", func(n string) string { return agentproto.Proof("another-token-another-token-another", n) }},
		{"proof of another nonce", func(string) string { return agentproto.Proof(testToken, agentproto.NewNonce()) }},
		{"the client's own MAC echoed", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(dir, "s"+string(rune('0'+i)))
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.proof != nil {
					w.Header().Set(agentproto.HeaderProof, tt.proof(r.Header.Get(agentproto.HeaderNonce)))
				} else {
					w.Header().Set(agentproto.HeaderProof, r.Header.Get(agentproto.HeaderAuth))
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"ok":true,"sandbox_id":"sb-test","pid":1}`))
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			c := agentclient.New("unix", sock, testToken)
			defer c.Close()
			_, err = c.Health(context.Background())
			wantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unverified")
			_, err = c.ReadFile(context.Background(), "x")
			wantErr(t, "ReadFile", err, errdefs.ErrUnavailable, "agent_unverified")
		})
	}
}

func TestUnreachable(t *testing.T) {
	c := agentclient.New("unix", filepath.Join(t.TempDir(), "nobody-listens"), testToken)
	defer c.Close()
	_, err := c.Health(context.Background())
	wantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unreachable")
	_, err = c.Exec(context.Background(), api.ExecRequest{Cmd: []string{"true"}})
	wantErr(t, "Exec", err, errdefs.ErrUnavailable, "agent_unreachable")
}
