package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the capacity the agent asks for the pipes it reads a
// command's output from: a command that writes fast then fills one
// chunkSize read per wake-up instead of the kernel's default 64 KiB.
// Best effort: a user over the kernel's pipe-user-pages-soft keeps the
// default.
const pipeBytes = 256 << 10

// widenPipe gives the pipe f is an end of pipeBytes of capacity, if the
// kernel lets it.
func widenPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes) })
}
