package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// serve is `network serve ADDR`: the HTTP server both paths are measured
// against. GET / answers -body bytes, after spinning the CPU for
// ?work=<duration> (an app that does something per request); GET
// /bytes?n=N streams N zero bytes. It prints its address once it listens.
func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	body := fs.Int("body", 1024, "bytes GET / answers")
	fs.Parse(args)
	page := make([]byte, *body)
	for i := range page {
		page[i] = 'a' + byte(i%26)
	}
	zeros := make([]byte, 256<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("work")); err == nil {
			spin(d)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.Write(page)
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "n", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			m := min(n, int64(len(zeros)))
			if _, err := w.Write(zeros[:m]); err != nil {
				return
			}
			n -= m
		}
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

// spin keeps a CPU busy for d.
func spin(d time.Duration) {
	var sum [sha256.Size]byte
	for t0 := time.Now(); time.Since(t0) < d; {
		sum = sha256.Sum256(sum[:])
	}
}
