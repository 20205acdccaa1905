package agentclient

import (
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// fdReader reads a tunnel's answer from the agent's socket and keeps the
// descriptors that come with it (SCM_RIGHTS): with FeatureTunnelFD the
// agent sends the socket it dialled to the sandbox's port with its 101.
type fdReader struct {
	uc  *net.UnixConn
	fds []int
	oob [64]byte
}

func (r *fdReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := r.uc.ReadMsgUnix(p, r.oob[:])
	n = max(n, 0)
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(r.oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if fds, perr := unix.ParseUnixRights(&m); perr == nil {
					r.fds = append(r.fds, fds...)
				}
			}
		}
	}
	return n, err
}

// take returns the one descriptor received as a connection, once it is
// checked to be what a tunnel must be: a TCP socket connected to a
// loopback address (of the sandbox's network namespace). Anything else,
// which only a subverted agent would send, is refused and closed.
func (r *fdReader) take() (net.Conn, error) {
	if len(r.fds) != 1 {
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_bad_answer", "the agent passed %d descriptors with a tunnel, not 1", len(r.fds))
	}
	fd := r.fds[0]
	if err := agentproto.CheckLoopbackTCP(fd); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_bad_answer", err, "the agent passed a descriptor that is not a tunnel: %s", err.Error())
	}
	r.fds = nil
	f := os.NewFile(uintptr(fd), "tunnel")
	defer f.Close()
	c, err := net.FileConn(f) // its own duplicate
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_bad_answer", err, "the passed tunnel socket is unusable")
	}
	return c, nil
}

// closeAll closes the descriptors not taken.
func (r *fdReader) closeAll() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
}
