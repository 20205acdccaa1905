package presets

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	want := []string{"node-express", "python-fastapi", "react-vite", "static", "worker"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if _, ok := Get("no-such-preset"); ok {
		t.Error(`Get("no-such-preset") found one`)
	}
}

func TestPresets(t *testing.T) {
	tests := []struct {
		name          string
		webCommand    string // "" for no web server
		port          int
		healthPath    string
		websocketPath string
		worker        string // the one worker's command, or ""
		setup         bool
	}{
		{name: "react-vite", webCommand: "npm run dev", port: 5173, healthPath: "/", websocketPath: "/", setup: true},
		{name: "node-express", webCommand: "node --watch server.js", port: 3000, healthPath: "/api/health", setup: true},
		{name: "python-fastapi", webCommand: "python3 -m uvicorn main:app --host 127.0.0.1 --port $PORT --reload", port: 8000, healthPath: "/api/health"},
		{name: "static", webCommand: "node dev-server.mjs", port: 8080, healthPath: "/"},
		{name: "worker", worker: "node worker.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustGet(t, tt.name)
			if p.Name != tt.name || p.Description == "" {
				t.Errorf("Name %q, Description %q", p.Name, p.Description)
			}
			if p.Template != "" {
				t.Errorf("Template %q, want the default root", p.Template)
			}
			if (p.Setup != nil) != tt.setup {
				t.Errorf("Setup %q", p.Setup)
			}
			if p.Setup != nil && p.SetupTimeoutS <= 0 {
				t.Errorf("Setup %q with SetupTimeoutS %d", p.Setup, p.SetupTimeoutS)
			}

			data, err := fs.ReadFile(p.Files, "sandbox.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "version: 1") {
				t.Errorf("sandbox.yaml does not say version: 1:\n%s", data)
			}
			m := readManifest(t, p)
			if m.Version != 1 {
				t.Errorf("version %d", m.Version)
			}
			switch {
			case tt.webCommand == "" && m.Web != nil:
				t.Errorf("web %+v, want none", *m.Web)
			case tt.webCommand != "" && m.Web == nil:
				t.Errorf("no web")
			case m.Web != nil:
				if m.Web.Command != tt.webCommand || m.Web.Port != tt.port ||
					m.Web.HealthPath != tt.healthPath || m.Web.WebSocketPath != tt.websocketPath {
					t.Errorf("web %+v, want command %q port %d health_path %q websocket_path %q",
						*m.Web, tt.webCommand, tt.port, tt.healthPath, tt.websocketPath)
				}
			}
			var workers []string
			for _, w := range m.Workers {
				workers = append(workers, w.Command)
			}
			var wantWorkers []string
			if tt.worker != "" {
				wantWorkers = []string{tt.worker}
			}
			if diff := cmp.Diff(wantWorkers, workers); diff != "" {
				t.Errorf("workers (-want +got):\n%s", diff)
			}
			// The file spells out the build check; it is the preset's default.
			if m.Build.Command != nil && *m.Build.Command != p.Build {
				t.Errorf("build.command %q, preset's Build %q", *m.Build.Command, p.Build)
			}

			// Nothing generated is embedded: setup and builds make those.
			err = fs.WalkDir(p.Files, ".", func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				switch d.Name() {
				case "node_modules", "dist", "__pycache__", "package-lock.json":
					t.Errorf("embedded %s", path)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGetCopies checks that a caller cannot change the registry through
// what Get returns.
func TestGetCopies(t *testing.T) {
	p := mustGet(t, "react-vite")
	p.Setup[0] = "changed"
	if q := mustGet(t, "react-vite"); q.Setup[0] != "npm" {
		t.Errorf("Setup[0] %q after a caller changed its copy", q.Setup[0])
	}
}

// TestDotfiles checks that the embedded trees keep their dotfiles, which a
// plain go:embed of a directory leaves out.
func TestDotfiles(t *testing.T) {
	for _, name := range []string{"react-vite", "node-express", "python-fastapi"} {
		if _, err := fs.Stat(mustGet(t, name).Files, ".gitignore"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// hmrMessage is the part of a Vite HMR message the tests read.
type hmrMessage struct {
	Type    string `json:"type"`
	Updates []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	} `json:"updates"`
}

var wsTokenRE = regexp.MustCompile(`const wsToken = "([^"]+)"`)

func TestReactVite(t *testing.T) {
	t.Parallel()
	needTools(t, "node", "npm")
	p := mustGet(t, "react-vite")
	m := readManifest(t, p)
	dir := checkout(t, p)
	env := npmEnv(t)
	took := runSetup(t, p, dir, env)
	t.Logf("setup %q: %s", p.Setup, took.Round(time.Millisecond))

	t.Run("dev", func(t *testing.T) {
		port := freePort(t)
		srv := start(t, dir, m.Web.Command, "dev", port, env)
		f := newFront(t, port, "/dev")
		t.Logf("first GET /dev/ answered after %s", f.waitUp(t, srv, "/dev/", 60*time.Second).Round(time.Millisecond))

		html, h := f.mustGet(t, "/dev/")
		if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(html, `<div id="root">`) {
			t.Fatalf("GET /dev/: %s\n%s", h.Get("Content-Type"), html)
		}
		for _, src := range []string{"/dev/@vite/client", "/dev/src/main.jsx", "/dev/@react-refresh"} {
			if !strings.Contains(html, `"`+src+`"`) {
				t.Errorf("the page does not load %s:\n%s", src, html)
			}
		}
		begin := time.Now()
		client, _ := f.mustGet(t, "/dev/@vite/client")
		f.mustGet(t, "/dev/@react-refresh")
		mainJS, _ := f.mustGet(t, "/dev/src/main.jsx")
		app, _ := f.mustGet(t, "/dev/src/App.jsx")
		t.Logf("modules /dev/@vite/client, /dev/@react-refresh, /dev/src/main.jsx, /dev/src/App.jsx loaded in %s", time.Since(begin).Round(time.Millisecond))
		if !strings.Contains(mainJS, "/dev/src/App.jsx") || !strings.Contains(app, "Hello from hutch") {
			t.Fatalf("modules do not import through /dev/:\n%s\n%s", mainJS, app)
		}
		// The dependencies React needs, as main.jsx imports them.
		for _, dep := range regexp.MustCompile(`"(/dev/node_modules/[^"]+)"`).FindAllStringSubmatch(mainJS, -1) {
			f.mustGet(t, dep[1])
		}

		// What the browser's HMR client does: the public host, /dev/, the
		// page's token, an Origin and the vite-hmr subprotocol.
		tok := wsTokenRE.FindStringSubmatch(client)
		if tok == nil {
			t.Fatalf("no wsToken in /dev/@vite/client")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		conn := dialHMR(ctx, t, f, "/dev/?token="+tok[1], "http://"+f.host)
		defer conn.CloseNow()
		if msg := readHMR(ctx, t, conn); msg.Type != "connected" {
			t.Fatalf("first HMR message %+v, want connected", msg)
		}

		// A health check's handshake: no Origin, no token.
		dialHMR(ctx, t, f, "/dev/", "").CloseNow()
		// And the same straight at the server, at the manifest's path.
		direct := front{url: "http://127.0.0.1:" + strconv.Itoa(port), host: f.host}
		dialHMR(ctx, t, direct, m.Web.WebSocketPath, "").CloseNow()

		// The HMR client pings this way before it reconnects.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/dev/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = f.host
		req.Header.Set("Accept", "text/x-vite-ping")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("HMR ping: status %d, want 204", resp.StatusCode)
		}

		editFile(t, dir, "src/App.jsx", "Hello from hutch", "Hello again from hutch")
		edited := time.Now()
		for {
			msg := readHMR(ctx, t, conn)
			if msg.Type != "update" {
				t.Logf("HMR message %+v", msg)
				continue
			}
			if len(msg.Updates) == 0 || !strings.HasSuffix(msg.Updates[0].Path, "/src/App.jsx") {
				t.Fatalf("HMR update %+v, want one for src/App.jsx", msg)
			}
			t.Logf("HMR update %+v %s after the edit", msg.Updates, time.Since(edited).Round(time.Millisecond))
			break
		}
		f.waitBody(t, "/dev/src/App.jsx?t="+strconv.FormatInt(time.Now().UnixMilli(), 10), "Hello again from hutch", 10*time.Second)
	})

	t.Run("live", func(t *testing.T) {
		port := freePort(t)
		srv := start(t, dir, m.Web.Command, "live", port, env)
		f := newFront(t, port, "")
		t.Logf("first GET / answered after %s", f.waitUp(t, srv, "/", 60*time.Second).Round(time.Millisecond))
		html, _ := f.mustGet(t, "/")
		if !strings.Contains(html, `"/src/main.jsx"`) || !strings.Contains(html, `"/@vite/client"`) {
			t.Fatalf("GET /:\n%s", html)
		}
		f.mustGet(t, "/src/main.jsx")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		dialHMR(ctx, t, f, m.Web.WebSocketPath, "").CloseNow()
	})

	t.Run("build", func(t *testing.T) {
		begin := time.Now()
		runShell(t, dir, p.Build, 5*time.Minute, env)
		t.Logf("%q: %s", p.Build, time.Since(begin).Round(time.Millisecond))
		if _, err := os.Stat(filepath.Join(dir, "dist", "index.html")); err != nil {
			t.Fatal(err)
		}
	})
}

// dialHMR opens Vite's HMR WebSocket through f and fails the test unless
// the handshake answers 101 with the vite-hmr subprotocol.
func dialHMR(ctx context.Context, t *testing.T, f front, path, origin string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.url, "http")+path, &websocket.DialOptions{
		Host:         f.host,
		HTTPHeader:   h,
		Subprotocols: []string{"vite-hmr"},
	})
	if err != nil {
		t.Fatalf("HMR handshake at %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || conn.Subprotocol() != "vite-hmr" {
		t.Fatalf("HMR handshake at %s: status %d, subprotocol %q", path, resp.StatusCode, conn.Subprotocol())
	}
	return conn
}

func readHMR(ctx context.Context, t *testing.T, conn *websocket.Conn) hmrMessage {
	t.Helper()
	_, data, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read HMR message: %v", err)
	}
	var msg hmrMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("HMR message %s: %v", data, err)
	}
	return msg
}

func TestNodeExpress(t *testing.T) {
	t.Parallel()
	needTools(t, "node", "npm")
	p := mustGet(t, "node-express")
	m := readManifest(t, p)
	dir := checkout(t, p)
	env := npmEnv(t)
	took := runSetup(t, p, dir, env)
	t.Logf("setup %q: %s", p.Setup, took.Round(time.Millisecond))
	runShell(t, dir, p.Build, time.Minute, nil)

	port := freePort(t)
	srv := start(t, dir, m.Web.Command, "dev", port, nil)
	f := newFront(t, port, "/dev")
	t.Logf("first GET /dev/ answered after %s", f.waitUp(t, srv, "/dev/", 30*time.Second).Round(time.Millisecond))
	devPage(t, f)
	devHealth(t, f, m.Web.HealthPath)

	editFile(t, dir, "server.js", "Hello from hutch", "Hello again from hutch")
	t.Logf("node --watch restarted with the edit after %s", f.waitBody(t, "/dev/", "Hello again from hutch", 20*time.Second).Round(time.Millisecond))
}

func TestPythonFastAPI(t *testing.T) {
	t.Parallel()
	python, err := fastapiPython()
	if err != nil {
		t.Skipf("%v (Debian: apt-get install -y python3-fastapi python3-uvicorn)", err)
	}
	p := mustGet(t, "python-fastapi")
	m := readManifest(t, p)
	dir := checkout(t, p)
	// The manifest says python3; make it the one that has fastapi.
	env := []string{"PATH=" + filepath.Dir(python) + string(os.PathListSeparator) + os.Getenv("PATH")}
	runShell(t, dir, p.Build, time.Minute, env)

	port := freePort(t)
	srv := start(t, dir, m.Web.Command, "dev", port, env)
	f := newFront(t, port, "/dev")
	t.Logf("first GET /dev/ answered after %s", f.waitUp(t, srv, "/dev/", 30*time.Second).Round(time.Millisecond))
	devPage(t, f)
	devHealth(t, f, m.Web.HealthPath)

	docs, _ := f.mustGet(t, "/dev/docs")
	if !strings.Contains(docs, "'/dev/openapi.json'") {
		t.Errorf("/dev/docs does not load /dev/openapi.json:\n%s", docs)
	}
	f.mustGet(t, "/dev/openapi.json")

	editFile(t, dir, "main.py", "Hello from hutch", "Hello again from hutch")
	t.Logf("uvicorn reloaded with the edit after %s", f.waitBody(t, "/dev/", "Hello again from hutch", 20*time.Second).Round(time.Millisecond))
}

func TestStatic(t *testing.T) {
	t.Parallel()
	needTools(t, "node")
	p := mustGet(t, "static")
	m := readManifest(t, p)
	dir := checkout(t, p)

	port := freePort(t)
	srv := start(t, dir, m.Web.Command, "dev", port, nil)
	f := newFront(t, port, "/dev")
	t.Logf("first GET /dev/ answered after %s", f.waitUp(t, srv, "/dev/", 30*time.Second).Round(time.Millisecond))
	html := devPage(t, f)
	if !strings.Contains(html, `new EventSource("/dev/__reload")`) {
		t.Errorf("no reload script for /dev/__reload in the page:\n%s", html)
	}
	if _, h := f.mustGet(t, "/dev/style.css"); !strings.HasPrefix(h.Get("Content-Type"), "text/css") {
		t.Errorf("style.css: Content-Type %q", h.Get("Content-Type"))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"/dev/%2e%2e/dev-server.mjs", "/dev/..%2fdev-server.mjs", "/dev/%2e%2e%2f%2e%2e%2fetc/passwd", "/dev/nope.html"} {
		if code, body, _, err := f.get(ctx, path); err != nil || code != http.StatusNotFound {
			t.Errorf("GET %s: %d %v, want 404\n%.200s", path, code, err, body)
		}
	}

	// The reload endpoint, as the page's EventSource opens it.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/dev/__reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = f.host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /dev/__reload: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(resp.Body)
	time.Sleep(200 * time.Millisecond) // let the stream settle before the edit
	editFile(t, dir, "public/style.css", "#fafafa", "#ffffff")
	edited := time.Now()
	select {
	case ev, ok := <-events:
		if !ok || ev != "reload" {
			t.Fatalf("event %q (open %v), want reload", ev, ok)
		}
		t.Logf("reload event %s after the edit", time.Since(edited).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("no reload event within 10s of the edit")
	}
}

func TestWorker(t *testing.T) {
	t.Parallel()
	needTools(t, "node")
	p := mustGet(t, "worker")
	m := readManifest(t, p)
	dir := checkout(t, p)
	w := start(t, dir, m.Workers[0].Command, "dev", 0, nil)
	w.waitOutput(t, "heartbeat 1 (role dev)", 10*time.Second)
	// The shell dies of the signal; the worker says it stopped cleanly.
	_ = w.stop()
	if !strings.Contains(w.out.String(), "stopping on SIGTERM") {
		t.Errorf("worker did not stop on SIGTERM:\n%s", w.out.String())
	}
}

// devPage GETs /dev/ through f and wants the preset's HTML page.
func devPage(t *testing.T, f front) string {
	t.Helper()
	html, h := f.mustGet(t, "/dev/")
	if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(html, "Hello from hutch") {
		t.Fatalf("GET /dev/: %s\n%s", h.Get("Content-Type"), html)
	}
	return html
}

// devHealth GETs the health path through f's /dev and wants the dev
// role's health.
func devHealth(t *testing.T, f front, path string) {
	t.Helper()
	health, _ := f.mustGet(t, "/dev"+path)
	if !strings.Contains(health, `"ok":true`) || !strings.Contains(health, `"role":"dev"`) {
		t.Errorf("GET %s: %s", path, health)
	}
}
