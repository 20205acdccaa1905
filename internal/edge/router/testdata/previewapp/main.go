// Command previewapp is the program the preview tests run inside a
// sandbox: a page (/) that opens a WebSocket and an event stream and shows
// what they bring, the request's headers as JSON (/headers), a
// Server-Sent Events stream of n events 100 ms apart (/events?n=), a
// WebSocket echo (/ws), a private page that lets any origin read it with
// the visitor's credentials, as a dev server with permissive CORS does
// (/private), and a page that tries to read another preview's /private
// (/attack?victim=<origin>).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>previewapp</title></head>
<body>
<p>echo: <span id="echo">waiting</span></p>
<p>events: <span id="count">0</span></p>
<p><a id="private" href="/private">private</a></p>
<script>
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
ws.onopen = () => ws.send("hello from the browser");
ws.onmessage = (m) => { document.getElementById("echo").textContent = m.data; };
ws.onerror = () => { document.getElementById("echo").textContent = "websocket error"; };
const es = new EventSource("/events?n=1000");
es.onmessage = (m) => { document.getElementById("count").textContent = m.data; };
</script>
</body></html>
`

// attackPage, served by one sandbox's preview, reads another's /private
// with the visitor's credentials: fetch (also with a forged Referer), a
// WebSocket, and an iframe the browser driver looks into.
const attackPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>attack</title></head>
<body>
<p>fetch: <span id="fetch">waiting</span></p>
<p>fetch with a forged Referer: <span id="forged">waiting</span></p>
<p>websocket: <span id="ws">waiting</span></p>
<p>iframe: <span id="frame">waiting</span></p>
<script>
const victim = new URLSearchParams(location.search).get("victim");
const set = (id, v) => { document.getElementById(id).textContent = v; };
const read = (id, opts) => fetch(victim + "/private", Object.assign({credentials: "include"}, opts))
  .then((r) => r.text()).then((t) => set(id, t), (e) => set(id, "error: " + e));
read("fetch", {});
read("forged", {referrer: victim + "/"});
const ws = new WebSocket(victim.replace(/^http/, "ws") + "/ws");
ws.onopen = () => set("ws", "open");
ws.onerror = () => set("ws", "error");
const f = document.createElement("iframe");
f.onload = () => set("frame", "loaded");
f.src = victim + "/private";
document.body.appendChild(f);
</script>
</body></html>
`

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("GET /private", func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			w.Header().Set("Access-Control-Allow-Origin", o)
			w.Header().Set("Access-Control-Allow-Credentials", "true")
			w.Header().Set("Vary", "Origin")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>private</title><p id=\"secret\">private content of %s</p><p id=\"site\">sec-fetch-site=%s</p>\n",
			html.EscapeString(r.Host), html.EscapeString(r.Header.Get("Sec-Fetch-Site")))
	})
	mux.HandleFunc("GET /attack", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, attackPage)
	})
	mux.HandleFunc("GET /headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"host": r.Host, "uri": r.RequestURI, "headers": r.Header, "remote": r.RemoteAddr,
		})
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n <= 0 {
			n = 10
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, "id: %d\ndata: %d\n\n", i, i)
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		// The default origin check holds: the router keeps the preview's Host.
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		ctx := context.Background()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, append([]byte("echo: "), b...)); err != nil {
				return
			}
		}
	})
	log.Printf("previewapp listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
