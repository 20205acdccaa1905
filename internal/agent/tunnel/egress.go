package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// maxEgressConns bounds the connections the forwarder carries at once.
const maxEgressConns = 512

// Forwarder carries every connection to the sandbox's proxy address to the
// control plane's egress proxy, which enforces the sandbox's policy. The
// agent adds nothing to what passes: the control plane knows the sandbox
// by the channel, not by anything the sandbox sends. With pass, it hands
// each connection itself over the channel (agentproto.EgressPassed), and
// the proxy talks to the sandbox's client with no copy in between.
type Forwarder struct {
	ln   net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	pass bool
	sem  chan struct{}
	wg   sync.WaitGroup
}

// StartForwarder listens on addr and forwards through dial, passing each
// connection whole with pass.
func StartForwarder(addr string, dial func(ctx context.Context) (net.Conn, error), pass bool) (*Forwarder, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &Forwarder{ln: ln, dial: dial, pass: pass, sem: make(chan struct{}, maxEgressConns)}
	f.wg.Go(f.serve)
	return f, nil
}

func (f *Forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case f.sem <- struct{}{}:
		default:
			c.Close() // too many at once
			continue
		}
		f.wg.Go(func() {
			defer func() { <-f.sem }()
			f.carry(c)
		})
	}
}

// carry copies one connection both ways through a new channel to the
// control plane (splice, as a tunnel does), or hands it over the channel.
func (f *Forwarder) carry(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := f.dial(ctx)
	cancel()
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhutch: the sandbox's egress channel is down\n")
		return
	}
	defer up.Close()
	if f.pass {
		if err := passConn(c, up); err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhutch: the sandbox's egress channel took no connection\n")
		}
		return
	}
	splice(c, c, up)
}

// passConn sends c over the channel up, SCM_RIGHTS with
// agentproto.EgressPassed; the caller then closes its own copies.
func passConn(c, up net.Conn) error {
	tcp, ok := c.(*net.TCPConn)
	uc, isUnix := up.(*net.UnixConn)
	if !ok || !isUnix {
		return fmt.Errorf("egress: cannot pass a %T over a %T", c, up)
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := rc.Control(func(fd uintptr) {
		_, _, sendErr = uc.WriteMsgUnix([]byte{agentproto.EgressPassed}, unix.UnixRights(int(fd)), nil)
	}); err != nil {
		return err
	}
	return sendErr
}

// Close stops accepting; connections in flight end with their peers.
func (f *Forwarder) Close() {
	f.ln.Close()
}
