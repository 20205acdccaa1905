package store

import (
	"errors"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
)

func TestNextEventID(t *testing.T) {
	// Last IDs from the far future, so the clock has not passed them.
	for _, tt := range []struct{ last, want string }{
		{"7zzzz0000000000000000000ab", "7zzzz0000000000000000000ac"},
		{"7zzzz00000000000000000000z", "7zzzz000000000000000000010"},
		{"7zzzz0000000000000000000hz", "7zzzz0000000000000000000j0"}, // no i in the alphabet
		{"7zzzz0zzzzzzzzzzzzzzzzzzzz", "7zzzz100000000000000000000"},
	} {
		if got := NextEventID(tt.last); got != tt.want {
			t.Errorf("NextEventID(%q) = %q, want %q", tt.last, got, tt.want)
		}
	}
	// The clock past last: a fresh ID of now.
	last := ids.At(time.Now().Add(-time.Hour))
	got := NextEventID(last)
	if got <= last || !ids.Valid(got) || got[:10] == last[:10] {
		t.Errorf("NextEventID(%q) = %q, want a fresh ID of now", last, got)
	}
	if got := NextEventID(""); !ids.Valid(got) {
		t.Errorf("NextEventID(\"\") = %q", got)
	}
	// Many in one millisecond keep increasing.
	prev := ""
	for range 1000 {
		id := NextEventID(prev)
		if id <= prev || !ids.Valid(id) {
			t.Fatalf("NextEventID(%q) = %q", prev, id)
		}
		prev = id
	}
}

func TestCheckAfter(t *testing.T) {
	if err := CheckAfter(""); err != nil {
		t.Errorf("CheckAfter(\"\") = %v", err)
	}
	if err := CheckAfter(ids.New()); err != nil {
		t.Errorf("CheckAfter(id) = %v", err)
	}
	for _, bad := range []string{"x", "01ARZ3NDEKTSV4RRFFQ69G5FAV", ids.New() + "0"} {
		err := CheckAfter(bad)
		if _, code, _ := errdefs.Classify(err); !errors.Is(err, errdefs.ErrInvalid) || code != "invalid_cursor" {
			t.Errorf("CheckAfter(%q) = %v, want invalid_cursor", bad, err)
		}
	}
}
