package tunnel

import (
	"net"
	"net/http"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// passSocket answers a tunnel request that asked for the socket itself
// (?pass=fd, agentproto.FeatureTunnelFD): the connection the agent dialled
// to the sandbox's port goes to the control plane over the Unix socket
// (SCM_RIGHTS), attached to the 101 answer's bytes, and the agent keeps no
// part of it. The control plane then talks to the app directly, and the
// agent copies no preview bytes. The control plane checks what it got is
// a TCP socket connected to a loopback address.
func (s *Service) passSocket(w http.ResponseWriter, r *http.Request, port int, backend net.Conn) {
	defer backend.Close()
	tcp, ok := backend.(*net.TCPConn)
	proof := w.Header().Get(agentproto.HeaderProof)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Warn("tunnel: hijack failed", "port", port, "err", err)
		return
	}
	defer conn.Close()
	uc, isUnix := conn.(*net.UnixConn)
	if !ok || !isUnix {
		// Not a Unix socket (a driver reaching the agent over TCP): no
		// descriptor can cross.
		conn.Write([]byte("HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n" + agentproto.HeaderProof + ": " + proof + "\r\nConnection: close\r\n\r\n"))
		return
	}
	answer := []byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + TunnelProtocol +
		"\r\n" + agentproto.HeaderProof + ": " + proof + "\r\n" + agentproto.HeaderTunnel + ": " + agentproto.TunnelPassed +
		"\r\n\r\n")
	rc, err := tcp.SyscallConn()
	if err != nil {
		return
	}
	var sendErr error
	if err := rc.Control(func(fd uintptr) {
		_, _, sendErr = uc.WriteMsgUnix(answer, unix.UnixRights(int(fd)), nil)
	}); err != nil || sendErr != nil {
		s.log.Warn("tunnel: pass the socket", "port", port, "err", err, "send_err", sendErr)
	}
}
