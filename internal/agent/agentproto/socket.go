package agentproto

import (
	"fmt"
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
