package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// probeTimeout bounds asking an agent binary for its protocol.
const probeTimeout = 10 * time.Second

// Protocol asks the agent binary at path what it speaks (hutch-agent
// -protocol). An agent of protocol 1 does not know the question: it reads
// an envelope from an empty stdin and exits 1 without a protocol, and
// Protocol answers the zero Info, which is protocol 1. It fails only when
// the binary cannot be run at all.
func Protocol(ctx context.Context, path string) (agentproto.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-protocol")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if _, exited := err.(*exec.ExitError); !exited {
			return agentproto.Info{}, fmt.Errorf("ask %s for its protocol: %w", path, err)
		}
	}
	var info agentproto.Info
	line, _, _ := bytes.Cut(out.Bytes(), []byte("\n"))
	if json.Unmarshal(line, &info) != nil || info.Protocol < 2 {
		return agentproto.Info{}, nil
	}
	return info, nil
}

// EnvelopeVersion is the envelope version to write an agent of info: the
// highest both sides know.
func EnvelopeVersion(info agentproto.Info) int {
	return min(info.Version(), envelope.Version)
}
