package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// BenchmarkProxy is the router's own cost per request: 64 keep-alive
// clients through the router to the test app over real TCP, as
// bench/network measures it with a sandbox behind, and the same clients
// straight to the app. cpu-µs/op is the CPU this process spent per request
// (clients, router and app); the router's own is the difference from
// "direct". Profile it with -cpuprofile.
func BenchmarkProxy(b *testing.B) {
	for _, tc := range []struct {
		name   string
		hdr    http.Header
		direct bool
	}{
		{name: "direct", direct: true},
		{name: "public"},
		{name: "key", hdr: http.Header{"Authorization": {"Bearer " + keyA}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b)
			if tc.hdr == nil {
				e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
			}
			addr := e.srv.Listener.Addr().String()
			if tc.direct {
				addr = e.app.Listener.Addr().String()
			}
			tr := &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				},
				MaxIdleConnsPerHost: 1024,
			}
			b.Cleanup(tr.CloseIdleConnections)
			hostHdr := host(idRunning, appPort) + ":" + strconv.Itoa(e.srv.Listener.Addr().(*net.TCPAddr).Port)
			b.ReportAllocs()
			b.SetParallelism(32)
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", "http://"+hostHdr+"/page", nil)
					for k, v := range tc.hdr {
						req.Header[k] = v
					}
					resp, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the CPU this process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
