package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

func TestPrintEvent(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.Local)
	for _, tc := range []struct {
		ev   api.Event
		want string
	}{
		{api.Event{Type: api.EventSandboxCreated, SandboxID: "01m81b6tzw5q2hcj7by01dvd6v", Message: "sandbox created", CreatedAt: at},
			at.Format(time.RFC3339) + "  sandbox.created    01m81b6tzw5q2hcj7by01dvd6v  sandbox created\n"},
		{api.Event{Type: "tenant.note", Message: "two\nlines", CreatedAt: at},
			at.Format(time.RFC3339) + "  tenant.note        -                           two lines\n"},
	} {
		var b bytes.Buffer
		if err := printEvent(&b, tc.ev); err != nil || b.String() != tc.want {
			t.Errorf("printEvent(%+v) = %q, %v; want %q", tc.ev, b.String(), err, tc.want)
		}
	}
}

func TestEventsUsage(t *testing.T) {
	e, errb := testEnv(map[string]string{"HUTCH_API_KEY": "k"})
	if code := run(context.Background(), e, []string{"events", "some-id"}); code != 2 || !strings.Contains(errb.String(), "--sandbox") {
		t.Errorf("hutch events some-id: exit %d, stderr %q; want 2 and a hint at --sandbox", code, errb.String())
	}
}
