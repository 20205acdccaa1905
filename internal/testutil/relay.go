package testutil

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay listens on addr (host:0 picks a port) and joins each connection
// to one it opens to target, until t ends: how a test lets the test
// cluster's Pods reach a service on the host's loopback (the API server,
// a Postgres) through the node's address. It returns the address it
// listens on.
func Relay(t testing.TB, addr, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("relay to %s: %v", target, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	track := func(c net.Conn, on bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false
		}
		if on {
			conns[c] = true
		} else {
			delete(conns, c)
		}
		return true
	}
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				if !track(in, true) || !track(out, true) {
					return
				}
				defer track(in, false)
				defer track(out, false)
				done := make(chan struct{})
				go func() {
					defer close(done)
					io.Copy(out, in)
					out.(*net.TCPConn).CloseWrite()
				}()
				io.Copy(in, out)
				in.(*net.TCPConn).CloseWrite()
				<-done
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}
