// Command previewapp is the program the preview tests run inside a
// sandbox: a page (/) that opens a WebSocket and an event stream and shows
// what they bring, the request's headers as JSON (/headers), a
// Server-Sent Events stream of n events 100 ms apart (/events?n=), and a
// WebSocket echo (/ws).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
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
