package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

var _ driver.Egresser = (*Driver)(nil)

// ListenEgress opens the sandbox's egress socket, run/egress.sock in its
// directory, readable and writable by the sandbox's user alone: nothing
// else can reach it, and the sandbox reaches nothing else.
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
	return ln, nil
}
