package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestStoreDown: with its Postgres server stopped, a node answers the
// API calls that need the store 503 store_unavailable with a
// Retry-After, never 500 internal.
func TestStoreDown(t *testing.T) {
	dsn, stop := testutil.OwnPostgres(t)
	var log bytes.Buffer
	cfg, logger := testConfig(t, &log)
	cfg.Store, cfg.StoreURL, cfg.Node = "postgres", dsn, "a"
	s, err := Start(context.Background(), cfg, logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	key, err := os.ReadFile(s.AdminKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (*http.Response, api.Error) {
		req, _ := http.NewRequest(method, "http://"+s.Addr().String()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.Error
		json.NewDecoder(resp.Body).Decode(&e)
		return resp, e
	}
	if resp, _ := call("GET", "/v1/sandboxes", ""); resp.StatusCode != 200 {
		t.Fatalf("list with the store up: %d", resp.StatusCode)
	}
	stop()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/sandboxes", ""},
		{"POST", "/v1/sandboxes", "{}"},
		{"GET", "/v1/events", ""},
		{"GET", "/v1/secrets", ""},
	} {
		resp, e := call(c.method, c.path, c.body)
		if resp.StatusCode != 503 || e.Error.Code != "store_unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with the store down: %d %+v, Retry-After %q; want 503 store_unavailable with a Retry-After",
				c.method, c.path, resp.StatusCode, e.Error, resp.Header.Get("Retry-After"))
		}
	}
}
