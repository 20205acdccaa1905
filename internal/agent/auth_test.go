package agent_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// signed is what a request's MAC covers.
type signed struct{ method, path, query, body string }

// sign sets the nonce, HeaderBody and MAC of a protocol 2 request.
func sign(req *http.Request, token, nonce string, s signed) {
	agenttest.Sign(req, token, nonce, s.method, s.path, s.query, s.body)
}

func sha(b string) string {
	h := sha256.Sum256([]byte(b))
	return hex.EncodeToString(h[:])
}

func TestAuth(t *testing.T) {
	f := agenttest.New(t, nil)
	hc := f.RawClient()
	do := func(req *http.Request) (*http.Response, api.Error) {
		t.Helper()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.Error
		json.NewDecoder(resp.Body).Decode(&e)
		return resp, e
	}
	send := func(token, nonce, method, path string, sig signed) (*http.Response, api.Error) {
		t.Helper()
		req, err := http.NewRequest(method, "http://agent"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if nonce != "" {
			sign(req, token, nonce, sig)
		}
		return do(req)
	}
	nonce := agentproto.NewNonce
	get := func(path string) signed { return signed{"GET", path, "", agentproto.EmptyBody} }
	tests := []struct {
		name         string
		token, nonce string
		method, url  string
		sig          signed
		status       int
		proof        bool
	}{
		{"good", agenttest.Token, nonce(), "GET", "/health", get("/health"), http.StatusOK, true},
		{"wrong token", "wrong-token-wrong-token-wrong-token", nonce(), "GET", "/health", get("/health"), http.StatusUnauthorized, true},
		{"signed for another path", agenttest.Token, nonce(), "GET", "/files/stat?path=x", signed{"GET", "/health", "path=x", agentproto.EmptyBody}, http.StatusUnauthorized, true},
		{"signed for another method", agenttest.Token, nonce(), "POST", "/shutdown", get("/shutdown"), http.StatusUnauthorized, true},
		{"signed for another query", agenttest.Token, nonce(), "GET", "/files/stat?path=/etc", signed{"GET", "/files/stat", "path=x", agentproto.EmptyBody}, http.StatusUnauthorized, true},
		{"query signed", agenttest.Token, nonce(), "GET", "/files/stat?path=.", signed{"GET", "/files/stat", "path=.", agentproto.EmptyBody}, http.StatusOK, true},
		{"no body header", agenttest.Token, nonce(), "GET", "/health", signed{"GET", "/health", "", ""}, http.StatusUnauthorized, true},
		{"body neither hashed nor framed", agenttest.Token, nonce(), "GET", "/health", signed{"GET", "/health", "", "stream"}, http.StatusUnauthorized, true},
		{"protocol 1 signature", agenttest.Token, nonce(), "GET", "/health", signed{}, http.StatusUnauthorized, true},
		{"no nonce", agenttest.Token, "", "GET", "/health", get("/health"), http.StatusUnauthorized, false},
		{"short nonce", agenttest.Token, "abcd", "GET", "/health", get("/health"), http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, "http://agent"+tt.url, nil)
			if tt.nonce != "" {
				sign(req, tt.token, tt.nonce, tt.sig)
				if tt.sig == (signed{}) {
					req.Header.Del(agentproto.HeaderBody)
					req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMACv1(tt.token, tt.nonce, tt.method, tt.url))
				}
			}
			resp, e := do(req)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d (%+v)", resp.StatusCode, tt.status, e)
			}
			if tt.status == http.StatusUnauthorized && e.Error.Code != "unauthorized" {
				t.Errorf("error %+v, want code unauthorized", e)
			}
			gotProof := resp.Header.Get(agentproto.HeaderProof)
			if tt.proof && gotProof != agentproto.Proof(agenttest.Token, tt.nonce) {
				t.Errorf("proof %q, want the agent's proof of the nonce", gotProof)
			}
			if !tt.proof && gotProof != "" {
				t.Errorf("proof %q on a request without a valid nonce", gotProof)
			}
		})
	}

	// A body that is not the one signed is refused before it is acted
	// on: the JSON of a mkdir, and a file upload whose signed trailer does
	// not match what arrived.
	t.Run("body swapped", func(t *testing.T) {
		body := `{"path":"swapped"}`
		req, _ := http.NewRequest("POST", "http://agent/files/mkdir", strings.NewReader(body))
		sign(req, agenttest.Token, nonce(), signed{"POST", "/files/mkdir", "", sha(`{"path":"signed"}`)})
		if resp, e := do(req); resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("status %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
		if _, err := os.Lstat(filepath.Join(f.Work, "swapped")); !os.IsNotExist(err) {
			t.Errorf("the swapped body was acted on: %v", err)
		}
	})
	// A framed upload whose MAC is of other data (here: framed for another
	// nonce, which the request's MAC does not cover) is refused, and the
	// file is not written; a tar upload is rolled back.
	upload := func(path, query, data string, frameNonce func(string) string) (*http.Response, api.Error) {
		n := nonce()
		req, _ := http.NewRequest("PUT", "http://agent"+path+"?"+query, agentproto.FrameBody(strings.NewReader(data), agenttest.Token, frameNonce(n)))
		sign(req, agenttest.Token, n, signed{"PUT", path, query, agentproto.BodyFramed})
		return do(req)
	}
	other := func(string) string { return nonce() }
	same := func(n string) string { return n }
	t.Run("framed body of another request", func(t *testing.T) {
		if resp, e := upload("/files", "path=up.txt", "what arrived", other); resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("status %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
		if _, err := os.Lstat(filepath.Join(f.Work, "up.txt")); !os.IsNotExist(err) {
			t.Errorf("the unverified upload was written: %v", err)
		}
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "t.txt", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("t"))
		tw.Close()
		if resp, e := upload("/files/tar", "path=untarred", tb.String(), other); resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("tar: status %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
		if _, err := os.Lstat(filepath.Join(f.Work, "untarred")); !os.IsNotExist(err) {
			t.Errorf("the unverified tar upload was not rolled back: %v", err)
		}
	})
	t.Run("framed body of this request", func(t *testing.T) {
		if resp, e := upload("/files", "path=up.txt", "what arrived", same); resp.StatusCode != http.StatusOK {
			t.Errorf("status %d %+v, want 200", resp.StatusCode, e)
		}
		if b, err := os.ReadFile(filepath.Join(f.Work, "up.txt")); err != nil || string(b) != "what arrived" {
			t.Errorf("read %q, %v", b, err)
		}
	})

	t.Run("replayed nonce", func(t *testing.T) {
		nonce := agentproto.NewNonce()
		if resp, _ := send(agenttest.Token, nonce, "GET", "/health", get("/health")); resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: status %d", resp.StatusCode)
		}
		resp, e := send(agenttest.Token, nonce, "GET", "/health", get("/health"))
		if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
			t.Errorf("replay: status %d %+v, want 401 unauthorized", resp.StatusCode, e)
		}
	})

	t.Run("client with the wrong token", func(t *testing.T) {
		c := agentclient.New("unix", f.Sock, "wrong-token-wrong-token-wrong-token")
		defer c.Close()
		// The agent answers 401 with its own proof, which this client cannot
		// verify, so it cannot trust even the 401.
		_, err := c.Health(context.Background())
		agenttest.WantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unverified")
	})

	t.Run("unknown route", func(t *testing.T) {
		resp, e := send(agenttest.Token, agentproto.NewNonce(), "POST", "/health", signed{"POST", "/health", "", agentproto.EmptyBody})
		if resp.StatusCode != http.StatusNotFound || e.Error.Code != "unknown_route" {
			t.Errorf("POST /health: status %d %+v, want 404 unknown_route", resp.StatusCode, e)
		}
	})

	t.Run("client with the right token", func(t *testing.T) {
		h, err := f.Client.Health(context.Background())
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
		{"proof of another nonce", func(string) string { return agentproto.Proof(agenttest.Token, agentproto.NewNonce()) }},
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
			srv.Protocols = new(http.Protocols)
			srv.Protocols.SetUnencryptedHTTP2(true)
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			c := agentclient.New("unix", sock, agenttest.Token)
			defer c.Close()
			_, err = c.Health(context.Background())
			agenttest.WantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unverified")
			_, err = c.ReadFile(context.Background(), "x")
			agenttest.WantErr(t, "ReadFile", err, errdefs.ErrUnavailable, "agent_unverified")
		})
	}
}

func TestUnreachable(t *testing.T) {
	c := agentclient.New("unix", filepath.Join(t.TempDir(), "nobody-listens"), agenttest.Token)
	defer c.Close()
	_, err := c.Health(context.Background())
	agenttest.WantErr(t, "Health", err, errdefs.ErrUnavailable, "agent_unreachable")
	_, err = c.Exec(context.Background(), api.ExecRequest{Cmd: []string{"true"}})
	agenttest.WantErr(t, "Exec", err, errdefs.ErrUnavailable, "agent_unreachable")
}
