package client

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\n\nid: 7\nevent: output\ndata: {\"a\":1}\n\ndata: line1\ndata: line2\n\nid: 9\ndata:x\n\n"
	r := newSSEReader(io.NopCloser(strings.NewReader(in)))
	var got []SSEEvent
	for {
		ev, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []SSEEvent{{ID: "7", Type: "output", Data: `{"a":1}`}, {Data: "line1\nline2"}, {ID: "9", Data: "x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}
