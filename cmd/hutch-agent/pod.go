package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// What the kubernetes driver starts the agent with: an init container
// runs "hutch-agent -install DST" from the agent's own image to put the
// binary where the sandbox's container finds it (an empty volume), and
// that container runs "hutch-agent -envelope-env", the envelope in
// $HUTCH_AGENT_ENVELOPE (from the sandbox's Secret) instead of on stdin.
const (
	installArg  = "-install"
	envelopeArg = "-envelope-env"
	// EnvelopeEnv holds the envelope, framed as on stdin, in base64.
	envelopeEnv = "HUTCH_AGENT_ENVELOPE"
)

// install copies the running binary to dst, executable by all, as a new
// file renamed into place (a half-copied agent is never run).
func install(dst string) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".hutch-agent-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// readEnvelope reads the envelope from stdin, or with -envelope-env from
// $HUTCH_AGENT_ENVELOPE, which it then unsets, so no command inherits it.
// (The kernel's copy of the agent's first environment stays, readable
// only by a process that may ptrace the agent, which is non-dumpable.)
func readEnvelope(args []string) (*envelope.Envelope, error) {
	if len(args) < 2 || args[1] != envelopeArg {
		return envelope.Decode(os.Stdin)
	}
	v, ok := os.LookupEnv(envelopeEnv)
	if !ok {
		return nil, errors.New("$" + envelopeEnv + " is not set")
	}
	os.Unsetenv(envelopeEnv)
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("$%s is not base64: %w", envelopeEnv, err)
	}
	return envelope.Decode(bytes.NewReader(b))
}

// listenTCP listens on the envelope's TCP address.
func listenTCP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}
