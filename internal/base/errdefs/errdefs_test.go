package errdefs

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestStatusRoundTrip(t *testing.T) {
	for _, s := range statuses {
		err := fmt.Errorf("context: %w", New(s.class, "some_code", "a message"))
		status, code, msg := HTTPStatus(err)
		if status != s.status || code != "some_code" || msg != "a message" {
			t.Errorf("HTTPStatus(%v) = %d %s %q", s.class, status, code, msg)
		}
		back := FromHTTP(status, code, msg)
		if !errors.Is(back, s.class) || back.Code != code || back.Message != msg {
			t.Errorf("FromHTTP(%d) = %+v, want class %v", status, back, s.class)
		}
	}
}

func TestInternalErrorsHideTheirCause(t *testing.T) {
	status, code, msg := HTTPStatus(errors.New("disk on fire at /var/lib/secret"))
	if status != http.StatusInternalServerError || code != "internal" || msg != "internal error" {
		t.Fatalf("unclassified error = %d %s %q", status, code, msg)
	}
	wrapped := Wrap(ErrNotFound, "x_not_found", errors.New("sql: no rows"), "x %d not found", 7)
	if _, _, msg := HTTPStatus(wrapped); msg != "x 7 not found" {
		t.Fatalf("message %q leaks the cause", msg)
	}
	if !errors.Is(FromHTTP(http.StatusTeapot, "odd", "odd"), errInternal) {
		t.Fatal("an unknown status is not internal")
	}
	if !errors.Is(FromHTTP(http.StatusBadGateway, "gw", "gw"), ErrUnavailable) {
		t.Fatal("502 is not unavailable")
	}
}
