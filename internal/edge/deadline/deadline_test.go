package deadline

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLift: a request that lifts the deadlines answers after the server's
// write timeout; one that does not is cut off.
func TestLift(t *testing.T) {
	const timeout = 100 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/long" {
			Lift(w)
		}
		time.Sleep(3 * timeout)
		io.WriteString(w, "done")
	}))
	srv.Config.WriteTimeout = timeout
	srv.Start()
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Get(srv.URL + "/long")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "done" {
		t.Fatalf("lifted: %q, %v", body, err)
	}
	if resp, err := srv.Client().Get(srv.URL + "/short"); err == nil {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && string(body) == "done" {
			t.Fatal("a request that did not lift the deadline answered after it")
		}
	}
}
