package proc

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

func TestOutRing(t *testing.T) {
	r := newOutRing(10)
	r.write(agentproto.Stdout, []byte("abcd"))
	r.write(agentproto.Stderr, []byte("efg"))
	evs, next, ended, _ := r.read(0)
	if got := render(evs); got != "stdout@0:abcd stderr@4:efg " || next != 7 || ended {
		t.Fatalf("read(0) = %q, %d, %v", got, next, ended)
	}
	// From the middle of a chunk.
	if evs, _, _, _ := r.read(2); render(evs) != "stdout@2:cd stderr@4:efg " {
		t.Fatalf("read(2) = %q", render(evs))
	}
	// Overflow drops the oldest chunks; a reader behind is told how much.
	r.write(agentproto.Stdout, []byte("hijklm"))
	evs, next, _, _ = r.read(0)
	if got := render(evs); got != "dropped@4:4 stderr@4:efg stdout@7:hijklm " || next != 13 {
		t.Fatalf("after overflow read(0) = %q, %d", got, next)
	}
	// A write larger than the ring keeps its tail.
	r.write(agentproto.Stdout, []byte(strings.Repeat("x", 15)+"END"))
	evs, next, _, _ = r.read(13)
	if got := render(evs); got != "dropped@21:8 stdout@21:xxxxxxxEND " || next != 31 {
		t.Fatalf("big write read(13) = %q, %d", got, next)
	}
	// A cursor past the end waits at the end; the end is reported once
	// the ring is closed and read through.
	_, _, ended, wake := r.read(100)
	if ended {
		t.Fatal("ended before close")
	}
	r.close()
	select {
	case <-wake:
	default:
		t.Fatal("close did not wake readers")
	}
	if _, _, ended, _ := r.read(31); !ended {
		t.Fatal("not ended after close")
	}
	// A reader behind gets the rest and the end together.
	if evs, _, ended, _ := r.read(25); render(evs) != "stdout@25:xxxEND " || !ended {
		t.Fatalf("read(25) after close = %q, ended %v", render(evs), ended)
	}
}

func render(evs []agentproto.OutputEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Type + "@")
		if e.Type == agentproto.Dropped {
			b.WriteString(itoa(e.Offset) + ":" + itoa(e.Dropped) + " ")
			continue
		}
		b.WriteString(itoa(e.Offset) + ":" + string(e.Data) + " ")
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
