package forward

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

var testKey = []byte(strings.Repeat("k", MinKeyBytes))

// nodes is a fixed map of node names to URLs.
type nodes map[string]string

func (n nodes) URL(_ context.Context, node string) (*url.URL, error) {
	s, ok := n[node]
	if !ok {
		return nil, errdefs.NotFound("node_not_found", "no node %s", node)
	}
	return url.Parse(s)
}

// fail writes err as the API does: its status and code.
func fail(w http.ResponseWriter, _ *http.Request, err error) {
	status, code, _ := errdefs.HTTPStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code})
}

// pair is two nodes: a, which forwards, and b, which accepts and serves
// with h.
func pair(t *testing.T, h http.Handler) (a *Forwarder, front *httptest.Server) {
	t.Helper()
	n := nodes{}
	b := New(Config{Node: "b", Key: testKey, Nodes: n, Fail: fail})
	owner := httptest.NewServer(b.Accept(h))
	t.Cleanup(owner.Close)
	n["b"] = owner.URL
	n["gone"] = "http://" + closedAddr(t)
	a = New(Config{Node: "a", Key: testKey, Nodes: n, Fail: fail})
	t.Cleanup(a.Close)
	front = httptest.NewServer(a.Accept(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Forward(w, r, r.Header.Get("To"), "key1")
	})))
	t.Cleanup(front.Close)
	return a, front
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func codeOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct{ Code string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Code
}

// TestForwardCarriesKeyIDNotSecret: the owner sees the key id and the
// receiving node's name, never the client's Authorization or X-API-KEY; the client's
// own forwarding headers are replaced by the signed ones.
func TestForwardCarriesKeyIDNotSecret(t *testing.T) {
	var got http.Header
	var hop Hop
	_, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		hop, _ = HopFrom(r.Context())
		io.WriteString(w, "ok "+r.Host+" "+r.URL.RequestURI())
	}))
	req, _ := http.NewRequest("GET", front.URL+"/v1/sandboxes/x/files?path=/a%20b", nil)
	req.Header.Set("Authorization", "Bearer hk_secret")
	req.Header.Set("X-API-KEY", "hk_secret")
	req.Header.Set("To", "b")
	req.Host = "3000-x.localhost"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok 3000-x.localhost /v1/sandboxes/x/files?path=/a%20b" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got.Get("Authorization") != "" || got.Get("X-API-KEY") != "" {
		t.Errorf("the owner received Authorization %q, X-API-KEY %q", got.Get("Authorization"), got.Get("X-API-KEY"))
	}
	for k, v := range got {
		if strings.HasPrefix(k, headerPrefix) || strings.Contains(strings.Join(v, ","), "hk_secret") {
			t.Errorf("the owner's handler saw header %s: %q", k, v)
		}
	}
	if hop != (Hop{KeyID: "key1", From: "a"}) {
		t.Errorf("hop = %+v", hop)
	}
}

// TestAcceptRefusesForgedHops: a request with forwarding headers but a
// missing, wrong, stale, replayed or misaddressed signature is 401
// forward_unauthorized and never reaches the handler.
func TestAcceptRefusesForgedHops(t *testing.T) {
	reached := false
	b := New(Config{Node: "b", Key: testKey, Nodes: nodes{}, Fail: fail})
	srv := httptest.NewServer(b.Accept(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true })))
	defer srv.Close()
	signed := func(key []byte, to string, at time.Time) *http.Request {
		r, _ := http.NewRequest("GET", srv.URL+"/v1/sandboxes/x", nil)
		sign(key, r, "key1", "a", to, at)
		return r
	}
	replayed := signed(testKey, "b", time.Now())
	tamper := signed(testKey, "b", time.Now())
	tamper.Header.Set(HeaderKeyID, "admin")
	path := signed(testKey, "b", time.Now())
	path.URL.Path = "/v1/sandboxes/y"
	bare, _ := http.NewRequest("GET", srv.URL+"/v1/sandboxes/x", nil)
	bare.Header.Set(HeaderKeyID, "key1")
	for name, r := range map[string]*http.Request{
		"missing signature": bare,
		"another key":       signed([]byte(strings.Repeat("z", MinKeyBytes)), "b", time.Now()),
		"another node":      signed(testKey, "c", time.Now()),
		"stale":             signed(testKey, "b", time.Now().Add(-2*Window)),
		"key id changed":    tamper,
		"path changed":      path,
	} {
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if code := codeOf(t, resp); resp.StatusCode != 401 || code != "forward_unauthorized" {
			t.Errorf("%s: %d %s, want 401 forward_unauthorized", name, resp.StatusCode, code)
		}
		resp.Body.Close()
	}
	if reached {
		t.Fatal("a forged hop reached the handler")
	}
	for i, want := range []int{200, 401} {
		r := replayed.Clone(context.Background())
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("send %d of one signed request: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// TestForwardStreamsBothWays: a request body and a response stream pass
// chunk by chunk (each echoed before the next is sent), so neither side
// is buffered whole; the client's going ends the owner's handler.
func TestForwardStreamsBothWays(t *testing.T) {
	ended := make(chan struct{})
	_, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.WriteHeader(200)
		rc.Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			io.WriteString(w, "echo "+sc.Text()+"\n")
			rc.Flush()
		}
		<-r.Context().Done()
	}))
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", front.URL+"/exec", pr)
	req.Header.Set("To", "b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	for _, line := range []string{"one", "two", "three"} {
		io.WriteString(pw, line+"\n")
		got, err := rd.ReadString('\n')
		if err != nil || got != "echo "+line+"\n" {
			t.Fatalf("read %q, %v; want the echo of %q", got, err, line)
		}
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the owner's handler still runs 5 s after the client went")
	}
}

// TestForwardUpgrade: a WebSocket-style upgrade passes, and bytes flow
// both ways over the hijacked connections.
func TestForwardUpgrade(t *testing.T) {
	_, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "test" {
			http.Error(w, "no upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		line, _ := brw.ReadString('\n')
		io.WriteString(conn, strings.ToUpper(line))
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /term HTTP/1.1\r\nHost: x\r\nTo: b\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(conn, "hello\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := rd.ReadString('\n'); got != "HELLO\n" {
		t.Fatalf("over the upgraded hop: %q, %v", got, err)
	}
}

// TestForwardFailures: an unreachable node is 503 node_unavailable within
// the dial bound; an unknown one too; a forwarded request is not
// forwarded again; no cluster key is 503 cluster_key_missing.
func TestForwardFailures(t *testing.T) {
	a, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// b forwards on what it was forwarded: a loop.
		New(Config{Node: "b", Key: testKey, Nodes: nodes{"a": "http://x"}, Fail: fail}).Forward(w, r, "a", "key1")
	}))
	_ = a
	for _, tc := range []struct{ to, code string }{
		{"gone", "node_unavailable"},
		{"nowhere", "node_unavailable"},
		{"b", "forward_loop"},
	} {
		req, _ := http.NewRequest("GET", front.URL+"/v1/sandboxes/x", nil)
		req.Header.Set("To", tc.to)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		code := codeOf(t, resp)
		resp.Body.Close()
		if code != tc.code || time.Since(start) > DefaultDialTimeout+time.Second {
			t.Errorf("to %s: %d %s after %v, want %s within the dial bound", tc.to, resp.StatusCode, code, time.Since(start), tc.code)
		}
	}
	keyless := New(Config{Node: "a", Nodes: nodes{}, Fail: fail})
	rec := httptest.NewRecorder()
	keyless.Forward(rec, httptest.NewRequest("GET", "/v1/sandboxes/x", nil), "b", "key1")
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "cluster_key_missing") {
		t.Errorf("without a cluster key: %d %s", rec.Code, rec.Body)
	}
}

// TestLoadKey: the environment wins; a file must be private; a short key
// is refused; none at all is no key and no error.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	if k, err := LoadKey("", dir); k != nil || err != nil {
		t.Fatalf("no key: %q, %v", k, err)
	}
	if _, err := LoadKey("short", dir); err == nil {
		t.Fatal("a short key was taken")
	}
	long := strings.Repeat("a", 64)
	if k, err := LoadKey(" "+long+"\n", dir); err != nil || string(k) != long {
		t.Fatalf("env key: %q, %v", k, err)
	}
	p := dir + "/" + KeyFile
	if err := writeFile(p, long+"\n", 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey("", dir); err == nil {
		t.Fatal("a key readable by others was taken")
	}
	if err := writeFile(p, long+"\n", 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKey("", dir); err != nil || string(k) != long {
		t.Fatalf("file key: %q, %v", k, err)
	}
	if _, err := LoadKey("", dir+"/missing/dir"); err != nil && !errors.Is(err, nil) {
		t.Fatal(err)
	}
}

// TestForwardFailureKeepsConnection: a request with a body forwarded to
// a node that refuses the connection is answered node_unavailable, and
// the client's connection serves its next request. (A full-duplex
// request whose body the hop never read used to panic the server's
// connection as it made ready for the next request, golang/go#68560:
// the client's next call on it found it closed.)
func TestForwardFailureKeepsConnection(t *testing.T) {
	_, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }))
	var panicked strings.Builder
	front.Config.ErrorLog = log.New(&panicked, "", 0)
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer hc.CloseIdleConnections()
	for i := range 20 {
		to := "gone"
		if i%2 == 1 {
			to = "b"
		}
		req, _ := http.NewRequest("POST", front.URL+"/v1/sandboxes/x/files", strings.NewReader(strings.Repeat("x", 64<<10)))
		req.Header.Set("To", to)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("request %d to %s: %v (the server's log: %s)", i, to, err, panicked.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[string]int{"gone": 503, "b": 200}[to]; resp.StatusCode != want {
			t.Fatalf("request %d to %s: %d %s, want %d", i, to, resp.StatusCode, body, want)
		}
	}
	if strings.Contains(panicked.String(), "panic") {
		t.Errorf("the server panicked: %s", panicked.String())
	}
}

// TestForwardLargeBodies: bodies of several MiB pass whole both ways, on
// hops running at once (which share the copy buffers, buffers.go), each
// its own bytes.
func TestForwardLargeBodies(t *testing.T) {
	_, front := pair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PUT" {
			sum := sha256.New()
			n, err := io.Copy(sum, r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "%d %x", n, sum.Sum(nil))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(blob(r.URL.Query().Get("seed"), 5<<20))
	}))
	var wg sync.WaitGroup
	for i := range 4 {
		seed := strconv.Itoa(i)
		wg.Go(func() {
			req, _ := http.NewRequest("GET", front.URL+"/files?seed="+seed, nil)
			req.Header.Set("To", "b")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, blob(seed, 5<<20)) {
				t.Errorf("download %s: %d bytes, %v; want its 5 MiB", seed, len(got), err)
			}
			up := blob(seed+"up", 7<<20)
			req, _ = http.NewRequest("PUT", front.URL+"/files", bytes.NewReader(up))
			req.Header.Set("To", "b")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d %x", len(up), sha256.Sum256(up)); string(body) != want {
				t.Errorf("upload %s: the owner read %q; want %q", seed, body, want)
			}
		})
	}
	wg.Wait()
}

// blob is n bytes that differ with seed.
func blob(seed string, n int) []byte {
	b := make([]byte, 0, n+sha256.Size)
	h := sha256.Sum256([]byte(seed))
	for len(b) < n {
		b = append(b, h[:]...)
		h = sha256.Sum256(h[:])
	}
	return b[:n]
}

// TestForwardFollowsRestartedNode: a node that restarted on another
// address is reached at once, though the old one is still kept: the hop
// that cannot connect on it asks the registry again and goes on, its
// body whole, and so does a node's own call.
func TestForwardFollowsRestartedNode(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	})
	n := &movable{urls: map[string]string{}}
	b := New(Config{Node: "b", Key: testKey, Nodes: n, Fail: fail})
	old := httptest.NewServer(b.Accept(echo))
	n.set("b", old.URL)
	a := New(Config{Node: "a", Key: testKey, Nodes: n, NodesTTL: time.Hour, Fail: fail})
	t.Cleanup(a.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.Forward(w, r, "b", "key1") }))
	t.Cleanup(front.Close)
	post := func(body string) (int, string) {
		resp, err := http.Post(front.URL+"/v1/sandboxes/x/files", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}
	if code, got := post("before"); code != 200 || got != "before" {
		t.Fatalf("before the restart: %d %q", code, got)
	}
	old.Close()
	a.tr.CloseIdleConnections()
	restarted := httptest.NewServer(b.Accept(echo))
	t.Cleanup(restarted.Close)
	n.set("b", restarted.URL)
	body := strings.Repeat("after", 10000)
	if code, got := post(body); code != 200 || got != body {
		t.Errorf("after the restart on another address: %d, %d bytes; want 200 and the body whole", code, len(got))
	}

	// And a node's own call, after another restart.
	restarted.Close()
	again := httptest.NewServer(b.Accept(echo))
	t.Cleanup(again.Close)
	n.set("b", again.URL)
	req, _ := http.NewRequest("GET", "/v1/templates/x/blob", nil)
	resp, err := a.Call(req, "b")
	if err != nil {
		t.Fatalf("a call after the restart: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a call after the restart: %d", resp.StatusCode)
	}
	if n.asked.Load() != 3 {
		t.Errorf("the registry was asked %d times; want once and once after each restart", n.asked.Load())
	}
}

// movable is a registry whose nodes move, counting its answers.
type movable struct {
	mu    sync.Mutex
	urls  map[string]string
	asked atomic.Int32
}

func (m *movable) set(node, u string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.urls[node] = u
}

func (m *movable) URL(_ context.Context, node string) (*url.URL, error) {
	m.asked.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	return url.Parse(m.urls[node])
}

// TestTryDeadPooledConnection: a create sent (Try) on a connection kept
// from an earlier call to a node that has since died, written before the
// death showed, is unreached, not answered: the caller places it
// elsewhere. (The transport retries it on a new connection, whose dial
// is refused.)
func TestTryDeadPooledConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A node that answers one request, then takes the next and dies.
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if req, err = http.ReadRequest(br); err == nil {
			io.Copy(io.Discard, req.Body)
		}
		ln.Close()
		conn.(*net.TCPConn).SetLinger(0) // a reset, as a killed process's
		conn.Close()
	}()
	a := New(Config{Node: "a", Key: testKey, Nodes: nodes{"dying": "http://" + ln.Addr().String()}, Fail: fail})
	t.Cleanup(a.Close)
	try := func() (error, *httptest.ResponseRecorder) {
		body := []byte(`{"template":"x"}`)
		r := httptest.NewRequest("POST", "/v1/sandboxes", bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		w := httptest.NewRecorder()
		return a.Try(w, r, "dying", "key1"), w
	}
	if err, w := try(); err != nil || w.Code != 200 {
		t.Fatalf("the first create: %v, %d", err, w.Code)
	}
	err, w := try()
	if err == nil || w.Body.Len() != 0 {
		t.Fatalf("a create on the dead node's kept connection: unreached %v, answered %d %q; want unreached and no answer", err, w.Code, w.Body)
	}
}
