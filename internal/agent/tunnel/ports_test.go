package tunnel_test

import (
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/tunnel"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// portsFixture is an agent that lists ports although it runs in the
// host's network namespace: the check stands in for a sandbox for the
// whole test, since GET /ports reads it at each request.
func portsFixture(t *testing.T) *agenttest.Fixture {
	t.Helper()
	t.Cleanup(tunnel.SetNetCheck(func() error { return nil }, 0))
	return agenttest.New(t, nil)
}

// listening is the agent's list, by port.
func listening(t *testing.T, f *agenttest.Fixture) map[int][]agentclient.ListeningSocket {
	t.Helper()
	socks, err := f.Client.ListeningPorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[int][]agentclient.ListeningSocket{}
	for _, s := range socks {
		m[s.Port] = append(m[s.Port], s)
	}
	return m
}

// TestPorts: sockets listening at each kind of address are listed with
// their family, address and scope; a connected socket and a closed port
// are not.
func TestPorts(t *testing.T) {
	f := portsFixture(t)
	if !f.Client.Has(agentproto.FeaturePorts) {
		t.Fatalf("the agent does not report %s", agentproto.FeaturePorts)
	}
	type want = []agentclient.ListeningSocket
	cases := map[int]want{}
	v4 := serveOn(t, "tcp4", "127.0.0.1:0", "")
	cases[v4.Port] = want{{Port: v4.Port, Family: "ipv4", Address: "127.0.0.1", Scope: "loopback"}}
	any4 := serveOn(t, "tcp4", "0.0.0.0:0", "")
	cases[any4.Port] = want{{Port: any4.Port, Family: "ipv4", Address: "0.0.0.0", Scope: "any"}}
	if hasIPv6Loopback() {
		v6 := serveOn(t, "tcp6", "[::1]:0", "")
		cases[v6.Port] = want{{Port: v6.Port, Family: "ipv6", Address: "::1", Scope: "loopback"}}
		// Go's "tcp" on [::] is one dual-stack socket, listed as IPv6.
		dual := serveOn(t, "tcp", ":0", "")
		cases[dual.Port] = want{{Port: dual.Port, Family: "ipv6", Address: "::", Scope: "any"}}
		// One port at both loopbacks, the ::1 server's socket apart.
		both := serveOn(t, "tcp4", "127.0.0.1:"+strconv.Itoa(closedPort(t)), "")
		serveOn(t, "tcp6", net.JoinHostPort("::1", strconv.Itoa(both.Port)), "")
		cases[both.Port] = want{
			{Port: both.Port, Family: "ipv4", Address: "127.0.0.1", Scope: "loopback"},
			{Port: both.Port, Family: "ipv6", Address: "::1", Scope: "loopback"},
		}
	}
	// A connection to v4: the client's end is no listener.
	conn, err := net.Dial("tcp4", v4.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := conn.LocalAddr().(*net.TCPAddr).Port
	closed := closedPort(t)

	got := listening(t, f)
	for port, w := range cases {
		if diff := cmp.Diff(w, got[port]); diff != "" {
			t.Errorf("port %d (-want +got):\n%s", port, diff)
		}
	}
	// The client's end holds 127.0.0.1:client, where nothing else binds.
	for _, s := range got[client] {
		if s.Address == "127.0.0.1" {
			t.Errorf("the client's end of a connection is listed: %+v", s)
		}
	}
	if s, ok := got[closed]; ok {
		t.Errorf("closed port %d is listed: %+v", closed, s)
	}
}

// TestPortsEgressLeftOut: the egress forwarder's port is never listed,
// whoever listens there.
func TestPortsEgressLeftOut(t *testing.T) {
	f := portsFixture(t)
	ln, err := net.Listen("tcp4", agentproto.EgressAddr)
	if err != nil {
		t.Skipf("%s is taken on this host: %v", agentproto.EgressAddr, err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(agentproto.EgressAddr)
	n, _ := strconv.Atoi(port)
	if s, ok := listening(t, f)[n]; ok {
		t.Fatalf("the egress port is listed: %+v", s)
	}
}

// TestPortsOutsideSandbox: an agent whose network is not the sandbox's
// own (the process driver; this test) lists nothing, as it opens no
// tunnels: those would be the host's sockets.
func TestPortsOutsideSandbox(t *testing.T) {
	if err := tunnel.OwnLoopback(); err == nil {
		t.Skip("this test runs as pid 1 of a namespace with loopback only")
	}
	f := agenttest.New(t, nil)
	_, err := f.Client.ListeningPorts(context.Background())
	agenttest.WantErr(t, "ports", err, errdefs.ErrUnsupported, agentclient.CodePreviewsUnsupported)
}

// TestPortsAgentTooOld: a client of an agent that did not report the
// feature does not ask it.
func TestPortsAgentTooOld(t *testing.T) {
	f := portsFixture(t)
	old := agentclient.New("unix", f.Sock, agenttest.Token, agentclient.Speaking(agentproto.Info{}))
	defer old.Close()
	_, err := old.ListeningPorts(context.Background())
	agenttest.WantErr(t, "ports of a protocol 1 agent", err, errdefs.ErrUnsupported, "agent_too_old")
}

// TestParseListening reads tables as a little-endian kernel writes them.
func TestParseListening(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the tables below are a little-endian kernel's")
	}
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tcp := head +
		"   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0\n" +
		"   1: 00000000:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 100 0 0 10 0\n" +
		"   2: 0100007F:1435 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1\n" +
		"   3: 0200007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4 1 0 100 0 0 10 0\n" +
		"   4: 0A00000A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5 1 0 100 0 0 10 0\n"
	tcp6 := head +
		"   0: 00000000000000000000000001000000:1435 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6 1 0 100 0 0 10 0\n" +
		"   1: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 7 1 0 100 0 0 10 0\n" +
		"   2: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 8 1 0 100 0 0 10 0\n" +
		"   3: 00000000000000000000000001000000:1435 00000000000000000000000001000000:C350 01 00000000:00000000 00:00000000 00000000  1000        0 9 1 0 20 4 30 10 -1\n"
	for _, tt := range []struct {
		name, family, table string
		want                []tunnel.ListeningSocket
	}{
		{"tcp", tunnel.FamilyIPv4, tcp, []tunnel.ListeningSocket{
			{Port: 5173, Family: "ipv4", Address: "127.0.0.1", Scope: "loopback"},
			{Port: 3000, Family: "ipv4", Address: "0.0.0.0", Scope: "any"},
			{Port: 80, Family: "ipv4", Address: "127.0.0.2", Scope: "loopback"},
			{Port: 80, Family: "ipv4", Address: "10.0.0.10", Scope: "other"},
		}},
		{"tcp6", tunnel.FamilyIPv6, tcp6, []tunnel.ListeningSocket{
			{Port: 5173, Family: "ipv6", Address: "::1", Scope: "loopback"},
			{Port: 3000, Family: "ipv6", Address: "::", Scope: "any"},
			{Port: 81, Family: "ipv6", Address: "::ffff:127.0.0.1", Scope: "loopback"},
		}},
		{"header only", tunnel.FamilyIPv4, head, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tunnel.ParseListening([]byte(tt.table), tt.family)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	for _, tt := range []struct{ name, family, line string }{
		{"short address", tunnel.FamilyIPv4, "0: 0100007:1435 00000000:0000 0A"},
		{"v6 address in tcp", tunnel.FamilyIPv4, "0: 00000000000000000000000001000000:1435 00000000:0000 0A"},
		{"not hex", tunnel.FamilyIPv4, "0: 0100007G:1435 00000000:0000 0A"},
		{"no port", tunnel.FamilyIPv4, "0: 0100007F 00000000:0000 0A"},
		{"port not hex", tunnel.FamilyIPv4, "0: 0100007F:14Z5 00000000:0000 0A"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tunnel.ParseListening([]byte(head+tt.line+"\n"), tt.family); err == nil || !strings.Contains(err.Error(), "line 2") {
				t.Fatalf("%q: %+v, %v; want an error naming line 2", tt.line, got, err)
			}
		})
	}
}
