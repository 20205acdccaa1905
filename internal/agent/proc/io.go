package proc

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// procIO is a background process's stdin and output: three pipes, or a
// pseudo-terminal whose master carries input one way and output the
// other.
type procIO struct {
	stdin  *os.File    // the agent's end of stdin: a pipe's write end or the master
	master *os.File    // the PTY master, or nil
	child  [3]*os.File // the child's stdin, stdout, stderr
	outs   []source    // what the agent reads output from
}

// source is one output stream's read end.
type source struct {
	f      *os.File
	stream string
}

func newProcIO(pty *agentproto.TermSize) (*procIO, error) {
	if pty != nil {
		return newPTY(*pty)
	}
	var p [3][2]*os.File
	for i := range p {
		r, w, err := os.Pipe()
		if err != nil {
			for _, q := range p[:i] {
				q[0].Close()
				q[1].Close()
			}
			return nil, fmt.Errorf("make a pipe: %w", err)
		}
		p[i] = [2]*os.File{r, w}
		if i > 0 {
			widenPipe(r)
		}
	}
	return &procIO{
		stdin: p[0][1],
		child: [3]*os.File{p[0][0], p[1][1], p[2][1]},
		outs:  []source{{p[1][0], agentproto.Stdout}, {p[2][0], agentproto.Stderr}},
	}, nil
}

// newPTY opens a pseudo-terminal of the sandbox's own devpts and sets its
// size. The child's end comes from TIOCGPTPEER, never from a path the
// sandbox could have replaced.
func newPTY(size agentproto.TermSize) (*procIO, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "pty_unavailable", err, "cannot open a pseudo-terminal: %s", err.Error())
	}
	fail := func(err error) (*procIO, error) {
		master.Close()
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "pty_unavailable", err, "cannot set up a pseudo-terminal: %s", err.Error())
	}
	rc, err := master.SyscallConn()
	if err != nil {
		return fail(err)
	}
	var peer int
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr != nil {
			return
		}
		if ioErr = setSize(int(fd), size); ioErr != nil {
			return
		}
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
		if errno != 0 {
			ioErr = errno
		}
		peer = int(r)
	}); err != nil {
		return fail(err)
	}
	if ioErr != nil {
		return fail(ioErr)
	}
	slave := os.NewFile(uintptr(peer), "pty")
	return &procIO{
		stdin:  master,
		master: master,
		child:  [3]*os.File{slave, slave, slave},
		outs:   []source{{master, agentproto.Stdout}},
	}, nil
}

func setSize(fd int, size agentproto.TermSize) error {
	return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
}

// childFiles are the child's fds 0, 1 and 2.
func (io *procIO) childFiles() []uintptr {
	return []uintptr{io.child[0].Fd(), io.child[1].Fd(), io.child[2].Fd()}
}

// sysProcAttr puts the child in a process group of its own, or, on a PTY,
// in a session of its own with the terminal as its controlling one.
func (io *procIO) sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	if io.master != nil {
		return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Credential: cred}
	}
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// closeChildEnds closes the agent's copies of the child's ends, once the
// child has them.
func (io *procIO) closeChildEnds() {
	seen := map[*os.File]bool{}
	for _, f := range io.child {
		if !seen[f] {
			seen[f] = true
			f.Close()
		}
	}
}

// closeAll closes everything (a start that failed).
func (io *procIO) closeAll() {
	io.closeChildEnds()
	io.closeOutputs()
	if io.stdin != io.master {
		io.stdin.Close()
	}
}

func (io *procIO) sources() []source { return io.outs }

func (io *procIO) setReadDeadline(t time.Time) {
	for _, s := range io.outs {
		_ = s.f.SetReadDeadline(t)
	}
}

func (io *procIO) closeOutputs() {
	for _, s := range io.outs {
		s.f.Close()
	}
}
