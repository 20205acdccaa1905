package client_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestDeleteKeyRequests: DeleteKey and DeleteKeyCascade send the route
// and query the server takes.
func TestDeleteKeyRequests(t *testing.T) {
	f := newFake(t)
	c := f.client()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		call func() error
		want recorded
	}{
		{"delete", func() error { return c.DeleteKey(ctx, "k9") }, recorded{Method: "DELETE", Path: "/v1/keys/k9"}},
		{"cascade", func() error { return c.DeleteKeyCascade(ctx, "k9") }, recorded{Method: "DELETE", Path: "/v1/keys/k9", RawQuery: "cascade=true"}},
	} {
		f.reset()
		_ = tt.call() // the fake knows no key
		if diff := cmp.Diff(tt.want, f.last(), cmpopts.IgnoreFields(recorded{}, "Auth", "UserAgent", "ContentType", "Body")); diff != "" {
			t.Errorf("%s: request (-want +got):\n%s", tt.name, diff)
		}
	}
	if err := c.DeleteKeyCascade(ctx, ""); err == nil {
		t.Error("DeleteKeyCascade without an id sent a request")
	}
}
