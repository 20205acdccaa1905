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
// against. GET / answers -body bytes, after ?work=<duration> of CPU work
// (an app that does something per request: -spin SHA-256 rounds a
// millisecond, the same count on both paths); GET /bytes?n=N streams N
// zero bytes. It prints its address once it listens.
func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	body := fs.Int("body", 1024, "bytes GET / answers")
	perMS := fs.Int("spin", 0, "SHA-256 rounds in a millisecond of work (0: measure here)")
	fs.Parse(args)
	if *perMS <= 0 {
		*perMS = spinRate()
	}
	page := make([]byte, *body)
	for i := range page {
		page[i] = 'a' + byte(i%26)
	}
	zeros := make([]byte, 256<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("work")); err == nil {
			spin(int(int64(*perMS) * int64(d) / int64(time.Millisecond)))
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

// spin does n rounds of SHA-256: a fixed amount of CPU work, whatever
// else runs. (Spinning until a time has passed would do less work when
// the CPU is shared, and more requests would finish than the CPU can
// serve.)
func spin(n int) [sha256.Size]byte {
	var sum [sha256.Size]byte
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

// spinRate is how many rounds of spin take a millisecond of one CPU: the
// best of twenty 10 ms samples, so that a busy moment does not count.
func spinRate() int {
	best := 0
	for range 20 {
		n := 0
		for t0 := time.Now(); time.Since(t0) < 10*time.Millisecond; n += 100 {
			spin(100)
		}
		best = max(best, n/10)
	}
	return best
}
