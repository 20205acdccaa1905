package agentclient

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// events decodes an exec or output stream in the form the agent chose:
// binary frames (protocol 2) or NDJSON (protocol 1, and any agent that
// did not take the Accept offer).
type events struct {
	frames *agentproto.FrameReader
	dec    *json.Decoder
}

func newEvents(resp *http.Response) events {
	if resp.Header.Get("Content-Type") == agentproto.MediaFrames {
		return events{frames: agentproto.NewFrameReader(resp.Body)}
	}
	return events{dec: json.NewDecoder(resp.Body)}
}

// recycle hands back an event's Data its reader is done with
// (agentproto.FrameReader.Recycle); NDJSON decodes into fresh slices.
func (e events) recycle(b []byte) {
	if e.frames != nil {
		e.frames.Recycle(b)
	}
}

// exec returns the next event of an exec stream.
func (e events) exec() (agentproto.ExecEvent, error) {
	var ev agentproto.ExecEvent
	if e.frames == nil {
		return ev, e.dec.Decode(&ev)
	}
	f, err := e.frames.Next()
	if err != nil {
		return ev, err
	}
	switch f.Kind {
	case agentproto.FrameStdout:
		return agentproto.ExecEvent{Type: agentproto.Stdout, Data: f.Payload}, nil
	case agentproto.FrameStderr:
		return agentproto.ExecEvent{Type: agentproto.Stderr, Data: f.Payload}, nil
	case agentproto.FrameExit:
		ev.Type, ev.Exit = agentproto.Exit, new(agentproto.ExitStatus)
		return ev, json.Unmarshal(f.Payload, ev.Exit)
	}
	return ev, fmt.Errorf("an exec stream has no frames of kind %d", f.Kind)
}

// output returns the next event of a process's output stream.
func (e events) output() (agentproto.OutputEvent, error) {
	var ev agentproto.OutputEvent
	if e.frames == nil {
		return ev, e.dec.Decode(&ev)
	}
	f, err := e.frames.Next()
	if err != nil {
		return ev, err
	}
	ev.Offset = f.Offset
	switch f.Kind {
	case agentproto.FrameStdout:
		ev.Type, ev.Data = agentproto.Stdout, f.Payload
	case agentproto.FrameStderr:
		ev.Type, ev.Data = agentproto.Stderr, f.Payload
	case agentproto.FrameDropped:
		if len(f.Payload) != 8 {
			return ev, fmt.Errorf("a dropped frame of %d bytes, not 8", len(f.Payload))
		}
		ev.Type, ev.Dropped = agentproto.Dropped, int64(binary.BigEndian.Uint64(f.Payload))
	case agentproto.FrameExit:
		ev.Type, ev.Process = agentproto.Exit, new(agentproto.Process)
		return ev, json.Unmarshal(f.Payload, ev.Process)
	}
	return ev, nil
}
