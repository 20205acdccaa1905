package client

import (
	"bufio"
	"bytes"
	"io"
)

// SSEEvent is one Server-Sent Event as the server sent it.
type SSEEvent struct {
	ID   string
	Type string
	Data string
}

// sseReader reads Server-Sent Events from a stream.
type sseReader struct {
	body io.ReadCloser
	sc   *bufio.Scanner
	data []byte // the data of the event nextBytes returned; reused
}

func newSSEReader(body io.ReadCloser) *sseReader {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &sseReader{body: body, sc: sc}
}

// next returns the next event, skipping comments; io.EOF when the stream
// ends.
func (r *sseReader) next() (SSEEvent, error) {
	id, typ, data, err := r.nextBytes()
	return SSEEvent{ID: id, Type: typ, Data: string(data)}, err
}

// nextBytes is next with the data as bytes, which are good until the
// next call: one copy of each event's data, and no more.
func (r *sseReader) nextBytes() (id, typ string, data []byte, err error) {
	r.data = r.data[:0]
	seen, lines := false, 0
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if seen {
				return id, typ, r.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		seen = true
		switch string(field) {
		case "id":
			id = string(value)
		case "event":
			typ = string(value)
		case "data":
			if lines > 0 {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			lines++
		}
	}
	if err := r.sc.Err(); err != nil {
		return id, typ, nil, err
	}
	return id, typ, nil, io.EOF
}

func (r *sseReader) close() error { return r.body.Close() }
