package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

var _ driver.Egresser = (*Driver)(nil)

// ListenEgress opens the sandbox's egress socket, run/egress.sock in its
// directory, readable and writable by the sandbox's user alone: nothing
// else can reach it, and the sandbox reaches nothing else. Its agent hands
// each of the sandbox's connections over it (nsinit.Config.EgressPass),
// which the listener returns (passListener); an agent without that sends
// each connection's bytes on a connection of its own.
func (d *Driver) ListenEgress(ctx context.Context, h driver.Handle) (net.Listener, error) {
	st, err := decodeState(h)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(st.Dir, runDir, egressSock)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	short, done, err := agentproto.SocketPath(p)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", short)
	done()
	if err != nil {
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	acct := d.accountOf(st)
	if err := os.Chown(p, d.hostUID(st, acct.id), d.hostGID(st, acct.gid)); err == nil {
		err = os.Chmod(p, 0o600)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	return listenPassed(ln), nil
}

// maxPending bounds the connections on the egress socket whose first
// message is still awaited.
const maxPending = 512

// passListener returns what comes over the egress socket: for a connection
// whose first message is agentproto.EgressPassed with a descriptor, the
// sandbox's connection that descriptor is, once checked (a TCP socket
// connected to a loopback address), in place of the channel; for any
// other, the channel itself, with its bytes. A first message is awaited
// beside Accept, which returns connections in the order they are ready.
type passListener struct {
	net.Listener
	ready chan accepted
	done  chan struct{}
	stop  sync.Once

	mu      sync.Mutex
	pending map[net.Conn]struct{} // closed with the listener
}

type accepted struct {
	c   net.Conn
	err error
}

func listenPassed(ln net.Listener) *passListener {
	l := &passListener{Listener: ln, ready: make(chan accepted), done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	go l.accept()
	return l
}

func (l *passListener) Accept() (net.Conn, error) {
	select {
	case a := <-l.ready:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *passListener) Close() error {
	err := l.Listener.Close()
	l.close()
	return err
}

// close ends Accept and the waits for first messages.
func (l *passListener) close() {
	l.stop.Do(func() {
		close(l.done)
		l.mu.Lock()
		defer l.mu.Unlock()
		for c := range l.pending {
			c.Close()
		}
		l.pending = nil
	})
}

func (l *passListener) accept() {
	sem := make(chan struct{}, maxPending)
	for {
		select {
		case sem <- struct{}{}:
		case <-l.done:
			return
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-sem
			if errors.Is(err, net.ErrClosed) {
				l.close()
				return
			}
			l.hand(accepted{err: err})
			continue
		}
		l.mu.Lock()
		if l.pending == nil {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.pending[c] = struct{}{}
		l.mu.Unlock()
		go func() {
			defer func() { <-sem }()
			got := first(c)
			l.mu.Lock()
			delete(l.pending, c)
			l.mu.Unlock()
			if got != nil && !l.hand(accepted{c: got}) {
				got.Close()
			}
		}()
	}
}

// hand gives a to Accept, unless the listener closes first.
func (l *passListener) hand(a accepted) bool {
	select {
	case l.ready <- a:
		return true
	case <-l.done:
		return false
	}
}

// first reads c's first message and returns the connection to serve: the
// passed one, or c with the bytes read; nil when c is closed or passed
// something else (which only a subverted agent would send).
func first(c net.Conn) net.Conn {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	n = max(n, 0)
	if oobn == 0 {
		if n == 0 {
			uc.Close()
			return nil
		}
		return &channelConn{UnixConn: uc, head: buf[:n]}
	}
	defer uc.Close()
	var fds []int
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if got, perr := unix.ParseUnixRights(&m); perr == nil {
				fds = append(fds, got...)
			}
		}
	}
	if err != nil || n != 1 || buf[0] != agentproto.EgressPassed || len(fds) != 1 || agentproto.CheckLoopbackTCP(fds[0]) != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil
	}
	f := os.NewFile(uintptr(fds[0]), "egress")
	defer f.Close()
	pc, err := net.FileConn(f) // its own duplicate
	tcp, ok := pc.(*net.TCPConn)
	if err != nil || !ok {
		if pc != nil {
			pc.Close()
		}
		return nil
	}
	return &passedConn{TCPConn: tcp, local: uc.LocalAddr(), remote: uc.RemoteAddr()}
}

// passedConn is a sandbox's connection its agent handed over. It gives
// the egress socket's addresses as its own, as a channel would, so the
// proxy counts every connection of the sandbox as one client's whatever
// loopback address the sandbox connected from. Its copies to and from
// other sockets are the TCP connection's own (splice).
type passedConn struct {
	*net.TCPConn
	local, remote net.Addr
}

func (c *passedConn) LocalAddr() net.Addr  { return c.local }
func (c *passedConn) RemoteAddr() net.Addr { return c.remote }

// channelConn is a channel that carries one connection's bytes, the first
// of them already read.
type channelConn struct {
	*net.UnixConn
	head []byte
}

func (c *channelConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.UnixConn.Read(p)
}
