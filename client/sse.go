package client

import (
	"bufio"
	"io"
	"strings"
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
}

func newSSEReader(body io.ReadCloser) *sseReader {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &sseReader{body: body, sc: sc}
}

// next returns the next event, skipping comments; io.EOF when the stream
// ends.
func (r *sseReader) next() (SSEEvent, error) {
	var ev SSEEvent
	var data []string
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if seen {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		seen = true
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
		}
	}
	if err := r.sc.Err(); err != nil {
		return ev, err
	}
	return ev, io.EOF
}

func (r *sseReader) close() error { return r.body.Close() }
