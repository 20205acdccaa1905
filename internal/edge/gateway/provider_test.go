package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ps, err := Parse([]byte(`
providers:
  - name: openai
    base_url: https://api.openai.com/v1/
    secret: OPENAI_API_KEY
  - name: anthropic
    base_url: https://api.anthropic.com
    header: x-api-key
    format: "{key}"
    secret: ANTHROPIC_API_KEY
    secret_tenant: 01jtenant
    requests_per_minute: 120
    burst: 5
    max_concurrent: 4
    max_request_bytes: 1048576
    header_timeout: 30s
  - name: search
    base_url: https://search.example.com/api
    query: key
    secret: SEARCH_KEY
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d providers", len(ps))
	}
	o, a, s := ps[0], ps[1], ps[2]
	if o.Header != "Authorization" || o.Format != "Bearer {key}" || o.RequestsPerMinute != DefaultRequestsPerMinute ||
		o.Burst != DefaultRequestsPerMinute/10 || o.MaxConcurrent != DefaultMaxConcurrent || o.HeaderTimeout != DefaultHeaderTimeout ||
		o.MaxRequestBytes != DefaultMaxRequestBytes || o.base.String() != "https://api.openai.com/v1" {
		t.Errorf("defaults: %+v", o)
	}
	if a.Header != "x-api-key" || a.Format != "{key}" || a.SecretTenant != "01jtenant" || a.RequestsPerMinute != 120 ||
		a.Burst != 5 || a.MaxConcurrent != 4 || a.MaxRequestBytes != 1<<20 || a.HeaderTimeout != 30*time.Second {
		t.Errorf("explicit: %+v", a)
	}
	if s.Query != "key" || s.Header != "" || s.Format != "{key}" {
		t.Errorf("query: %+v", s)
	}
	if got := a.credential([]byte("k1")); got != "k1" {
		t.Errorf("credential %q", got)
	}
	if got := o.credential([]byte("k1")); got != "Bearer k1" {
		t.Errorf("credential %q", got)
	}
}

func TestParseRefuses(t *testing.T) {
	for what, c := range map[string]struct{ doc, want string }{
		"bad name":           {"providers: [{name: Open_AI, base_url: 'https://x', secret: K}]", "name must be"},
		"no base URL":        {"providers: [{name: a, secret: K}]", "base_url"},
		"relative base URL":  {"providers: [{name: a, base_url: /v1, secret: K}]", "absolute http or https"},
		"ftp base URL":       {"providers: [{name: a, base_url: 'ftp://x', secret: K}]", "absolute http or https"},
		"user in base URL":   {"providers: [{name: a, base_url: 'https://u:p@x', secret: K}]", "no user, query"},
		"query in base URL":  {"providers: [{name: a, base_url: 'https://x/?k=1', secret: K}]", "no user, query"},
		"no secret":          {"providers: [{name: a, base_url: 'https://x'}]", "secret"},
		"format without key": {"providers: [{name: a, base_url: 'https://x', secret: K, format: 'Bearer'}]", "{key}"},
		"format, key twice":  {"providers: [{name: a, base_url: 'https://x', secret: K, format: '{key}{key}'}]", "{key}"},
		"header and query":   {"providers: [{name: a, base_url: 'https://x', secret: K, header: A, query: k}]", "not both"},
		"bad header":         {"providers: [{name: a, base_url: 'https://x', secret: K, header: 'A B'}]", "not a header name"},
		"negative limit":     {"providers: [{name: a, base_url: 'https://x', secret: K, burst: -1}]", "positive"},
		"twice":              {"providers: [{name: a, base_url: 'https://x', secret: K}, {name: a, base_url: 'https://y', secret: K}]", "twice"},
		"unknown field":      {"providers: [{name: a, base_url: 'https://x', secret: K, api_key: sk-1}]", "api_key"},
		"not YAML":           {"providers: [", "providers"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", what, err, c.want)
		}
	}
}

func TestTarget(t *testing.T) {
	ps, err := Parse([]byte("providers: [{name: a, base_url: 'https://up.example/api/v1', secret: K}]"))
	if err != nil {
		t.Fatal(err)
	}
	p := &ps[0]
	for rest, want := range map[string]string{
		"chat/completions": "https://up.example/api/v1/chat/completions?q=1",
		"":                 "https://up.example/api/v1?q=1",
		"models/":          "https://up.example/api/v1/models/?q=1",
		"a%20b/c":          "https://up.example/api/v1/a%20b/c?q=1",
		"v1:generate":      "https://up.example/api/v1/v1:generate?q=1",
	} {
		u, err := p.target(rest, "q=1")
		if err != nil || u.String() != want {
			t.Errorf("target(%q) = %v, %v; want %s", rest, u, err, want)
		}
	}
	for _, rest := range []string{"..", "a/..", "../b", "%2e%2e/b", "a/%2E", "a%2fb", "a%5Cb", "%00", "%zz"} {
		if u, err := p.target(rest, ""); err == nil {
			t.Errorf("target(%q) = %v, want a refusal", rest, u)
		}
	}
}
