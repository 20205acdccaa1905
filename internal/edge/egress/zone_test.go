package egress

import (
	"bufio"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
)

// TestZonedAddressesRefused: an address with a zone id names the same
// host address without it (the kernel ignores a zone it does not need),
// so the policy checks it without its zone: the host's [::1] and its own
// addresses stay out of reach however they are spelt. (A zoned address
// used to pass every check: netip.Prefix.Contains is false for one.)
func TestZonedAddressesRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var own []string
	for a := range ownAddrs() {
		if a.Is6() && !a.IsLoopback() {
			own = append(own, a.String())
		}
	}
	f := newFixture(t, &Config{}, api.NetworkPolicy{Egress: "public"})
	targets := []string{"::1%lo", "::1%25lo", "::1%1", "::%lo", "::ffff:127.0.0.1%lo", "0:0:0:0:0:0:0:1%eth0", "::1%"}
	for _, a := range own {
		targets = append(targets, a+"%lo")
	}
	for _, host := range targets {
		code, status := connect(t, f, "["+host+"]:"+port)
		if code == http.StatusOK {
			t.Errorf("public CONNECT to [%s]:%s was let through (%s)", host, port, status)
		}
	}
	select {
	case <-accepted:
		t.Fatal("a zoned address reached a server on the host's [::1]")
	case <-time.After(100 * time.Millisecond):
	}
	// Unit level: every check sees the address without its zone.
	p, _ := netpolicy.Parse(api.NetworkPolicy{Egress: "public"})
	for _, s := range []string{"::1%lo", "fe80::1%eth0", "fd00::1%x", "::ffff:10.0.0.1%lo"} {
		if d := p.AllowAddr(netip.MustParseAddr(s), false, nil, nil); d.Allowed {
			t.Errorf("allowAddr(%s) allowed it", s)
		}
	}
}

// connect sends CONNECT target through the fixture's proxy and returns
// the status.
func connect(t *testing.T, f *fixture, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", f.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err.Error()
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return 0, line
	}
	code, _ := strconv.Atoi(fields[1])
	return code, strings.TrimSpace(line)
}
