package main

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// relayedPipe times the output of `head -c size /dev/zero` carried the
// way the API carries it, with nothing else: read from its pipe and written
// into a Unix socket (the agent's leg), read from that and written into a
// loopback TCP connection (the control plane's), read from that (the
// client's), each by a plain loop of 256 KiB reads and writes. No framing,
// no HTTP, no copy in user space: the kernel's copies on three hops. It is
// the floor of any design that keeps those hops.
func relayedPipe(size int) (time.Duration, error) {
	agentEnd, serverEnd, err := unixPair()
	if err != nil {
		return 0, err
	}
	defer agentEnd.Close()
	defer serverEnd.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	toClient, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer toClient.Close()
	client, err := ln.Accept()
	if err != nil {
		return 0, err
	}
	defer client.Close()

	return timeHead(size, func(out io.Reader) (int64, error) {
		hops := make(chan error, 2)
		hop := func(dst io.Writer, src io.Reader) {
			_, err := relay(dst, src, true)
			hops <- err
		}
		go hop(agentEnd, out)
		go hop(toClient, serverEnd)
		n, err := relay(io.Discard, client, false)
		for range 2 {
			if e := <-hops; e != nil && err == nil {
				err = e
			}
		}
		return n, err
	})
}

// relay copies src to dst in 256 KiB reads until EOF, and then, when
// closeDst, closes dst's write side so the next hop sees EOF.
func relay(dst io.Writer, src io.Reader, closeDst bool) (int64, error) {
	buf := make([]byte, 256<<10)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if errors.Is(err, io.EOF) {
			if c, ok := dst.(interface{ CloseWrite() error }); ok && closeDst {
				return total, c.CloseWrite()
			}
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// unixPair is a connected pair of Unix stream sockets.
func unixPair() (*net.UnixConn, *net.UnixConn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var conns [2]*net.UnixConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 0 {
				syscall.Close(fds[1])
			} else {
				conns[0].Close()
			}
			return nil, nil, err
		}
		conns[i] = c.(*net.UnixConn)
	}
	return conns[0], conns[1], nil
}
