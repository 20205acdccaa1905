package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// secretsFake answers the secret routes from a map, as the server would:
// values in, metadata out.
type secretsFake struct {
	mu       sync.Mutex
	values   map[string]string
	requests []recorded
}

func newSecretsFake(t *testing.T) (*secretsFake, *client.Client) {
	t.Helper()
	f := &secretsFake{values: map[string]string{}}
	meta := func(name string) api.Secret {
		return api.Secret{ID: "id-" + name, Name: name, ValueBytes: len(f.values[name]), CreatedAt: time.Unix(0, 0).UTC(), UpdatedAt: time.Unix(0, 0).UTC()}
	}
	fail := func(w http.ResponseWriter, status int, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: code, Message: code}})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/secrets", func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateSecretRequest
		json.NewDecoder(r.Body).Decode(&req)
		if _, ok := f.values[req.Name]; ok {
			fail(w, http.StatusConflict, "secret_exists")
			return
		}
		f.values[req.Name] = string(req.Value)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(meta(req.Name))
	})
	mux.HandleFunc("PUT /v1/secrets/{name}", func(w http.ResponseWriter, r *http.Request) {
		var req api.ReplaceSecretRequest
		json.NewDecoder(r.Body).Decode(&req)
		name := r.PathValue("name")
		if _, ok := f.values[name]; !ok {
			fail(w, http.StatusNotFound, "secret_not_found")
			return
		}
		f.values[name] = string(req.Value)
		json.NewEncoder(w).Encode(meta(name))
	})
	mux.HandleFunc("GET /v1/secrets", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(api.SecretList{Secrets: []api.Secret{meta("A")}})
	})
	mux.HandleFunc("GET /v1/secrets/{name}", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(meta(r.PathValue("name")))
	})
	mux.HandleFunc("DELETE /v1/secrets/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, recorded{Method: r.Method, Path: r.URL.EscapedPath(), ContentType: r.Header.Get("Content-Type"), Body: b})
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, client.New(srv.URL, testKey)
}

func TestSecretCalls(t *testing.T) {
	f, c := newSecretsFake(t)
	ctx := t.Context()
	const value = "sk-CLIENT-CANARY"

	sec, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: "API_KEY", Description: "d", Value: value})
	if err != nil || sec.Name != "API_KEY" || sec.ValueBytes != len(value) {
		t.Fatalf("CreateSecret = %+v, %v", sec, err)
	}
	if _, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: "API_KEY", Value: value}); !client.IsConflict(err) || client.Code(err) != "secret_exists" {
		t.Errorf("duplicate: %v", err)
	}
	desc := "new"
	if sec, err := c.ReplaceSecret(ctx, "API_KEY", api.ReplaceSecretRequest{Value: "v2", Description: &desc}); err != nil || sec.ValueBytes != 2 {
		t.Errorf("ReplaceSecret = %+v, %v", sec, err)
	}
	if _, err := c.ReplaceSecret(ctx, "MISSING", api.ReplaceSecretRequest{Value: "v"}); !client.IsNotFound(err) {
		t.Errorf("replace of a missing secret: %v", err)
	}
	if list, err := c.ListSecrets(ctx); err != nil || len(list.Secrets) != 1 {
		t.Errorf("ListSecrets = %+v, %v", list, err)
	}
	if _, err := c.GetSecret(ctx, "a.b-c"); err != nil {
		t.Errorf("GetSecret: %v", err)
	}
	if err := c.DeleteSecret(ctx, "x y"); err != nil {
		t.Errorf("DeleteSecret: %v", err)
	}
	for _, call := range []func() error{
		func() error { _, err := c.GetSecret(ctx, ""); return err },
		func() error { _, err := c.ReplaceSecret(ctx, "", api.ReplaceSecretRequest{Value: "v"}); return err },
		func() error { return c.DeleteSecret(ctx, "") },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "empty secret name") {
			t.Errorf("empty name: %v", err)
		}
	}

	want := []recorded{
		{Method: "POST", Path: "/v1/secrets", ContentType: "application/json",
			Body: []byte(`{"name":"API_KEY","description":"d","value":"` + value + `"}`)},
		{Method: "POST", Path: "/v1/secrets", ContentType: "application/json",
			Body: []byte(`{"name":"API_KEY","value":"` + value + `"}`)},
		{Method: "PUT", Path: "/v1/secrets/API_KEY", ContentType: "application/json", Body: []byte(`{"value":"v2","description":"new"}`)},
		{Method: "PUT", Path: "/v1/secrets/MISSING", ContentType: "application/json", Body: []byte(`{"value":"v"}`)},
		{Method: "GET", Path: "/v1/secrets", Body: []byte{}},
		{Method: "GET", Path: "/v1/secrets/a.b-c", Body: []byte{}},
		{Method: "DELETE", Path: "/v1/secrets/x%20y", Body: []byte{}},
	}
	for i := range f.requests {
		f.requests[i].Body = []byte(strings.TrimSpace(string(f.requests[i].Body)))
	}
	if diff := cmp.Diff(want, f.requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestSecretRequestRedacts: printing or logging a request does not show
// its value; only its JSON, the wire form, carries it.
func TestSecretRequestRedacts(t *testing.T) {
	const value = "sk-PRINTED-CANARY"
	req := api.CreateSecretRequest{Name: "N", Value: value}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		if s := fmt.Sprintf(f, req); strings.Contains(s, value) || strings.Contains(s, fmt.Sprintf("%x", value)) {
			t.Errorf("%s shows the value: %s", f, s)
		}
	}
	if s := fmt.Sprint(req.Value); s != api.Redacted {
		t.Errorf("Sprint(value) = %q", s)
	}
}
