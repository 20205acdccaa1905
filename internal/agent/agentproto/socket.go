package agentproto

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxSunPath is the room for a path in struct sockaddr_un, less its NUL.
const maxSunPath = 107

// SocketPath returns a path to the Unix socket at p that fits a
// sockaddr_un: p itself when it is short enough, else
// /proc/self/fd/<n>/<name> through an O_PATH descriptor of p's directory
// (sandbox directories can sit deep in a data directory). The caller calls
// done once it has bound or connected.
func SocketPath(p string) (path string, done func(), err error) {
	if len(p) <= maxSunPath {
		return p, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open the socket's directory: %w", err)
	}
	short := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + filepath.Base(p)
	if len(short) > maxSunPath {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %q is too long", filepath.Base(p))
	}
	return short, func() { unix.Close(fd) }, nil
}

// CheckLoopbackTCP says why fd, a descriptor an agent passed (a tunnel's
// socket, a sandbox's connection to its egress proxy), is not a connected
// TCP socket whose peer is a loopback address (of the sandbox's network
// namespace).
func CheckLoopbackTCP(fd int) error {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return fmt.Errorf("not a socket: %w", err)
	}
	proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err != nil || typ != unix.SOCK_STREAM || proto != unix.IPPROTO_TCP {
		return errors.New("not a TCP socket")
	}
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return fmt.Errorf("not connected: %w", err)
	}
	var addr netip.Addr
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		addr = netip.AddrFrom4(sa.Addr)
	case *unix.SockaddrInet6:
		addr = netip.AddrFrom16(sa.Addr).Unmap()
	default:
		return errors.New("not an IP socket")
	}
	if !addr.IsLoopback() {
		return fmt.Errorf("connected to %s, not a loopback address", addr)
	}
	return nil
}
