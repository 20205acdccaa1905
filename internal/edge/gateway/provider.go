package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hutchdev/hutch/internal/control/secrets"
)

// Provider is one upstream the operator lets sandboxes call: where it is,
// how the key goes on a request, which secret holds the key, and how much
// one sandbox may use it.
type Provider struct {
	// Name is the path segment: /provider/v1/<name>/…
	Name string `yaml:"name"`
	// BaseURL is the upstream prefix; a call's path is joined below it and
	// may never leave it.
	BaseURL string `yaml:"base_url"`
	// Header carries the key ("Authorization" unless Query is set), in
	// Format, where {key} stands for the key ("Bearer {key}" by default).
	Header string `yaml:"header"`
	Format string `yaml:"format"`
	// Query, instead of a header, puts the key in this query parameter.
	Query string `yaml:"query"`
	// Secret names the secret holding the key, in the calling sandbox's
	// tenant, or in SecretTenant's when set (a key the operator shares).
	Secret       string `yaml:"secret"`
	SecretTenant string `yaml:"secret_tenant"`
	// RequestsPerMinute and Burst bound the calls of one sandbox to this
	// provider; MaxConcurrent bounds those in flight at once.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	Burst             int `yaml:"burst"`
	MaxConcurrent     int `yaml:"max_concurrent"`
	// MaxRequestBytes bounds one request body.
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// HeaderTimeout bounds the wait for the upstream's response headers;
	// the streamed body after them is not bounded.
	HeaderTimeout time.Duration `yaml:"header_timeout"`

	base *url.URL
}

// Defaults of a provider's optional fields.
const (
	DefaultRequestsPerMinute = 600
	DefaultMaxConcurrent     = 32
	DefaultMaxRequestBytes   = 32 << 20
	DefaultHeaderTimeout     = 5 * time.Minute
	keyPlaceholder           = "{key}"
)

var providerName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// headerName is an HTTP token (RFC 9110 §5.6.2).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// file is the providers file's shape.
type file struct {
	Providers []Provider `yaml:"providers"`
}

// LoadFile reads the operator's providers file (YAML, a top-level
// "providers" list) and checks every entry.
func LoadFile(path string) ([]Provider, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("providers: %w", err)
	}
	return Parse(b)
}

// Parse reads a providers document and checks every entry; unknown fields
// are errors, so a misspelt option is not silently ignored.
func Parse(b []byte) ([]Provider, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("providers: %w", err)
	}
	var errs []error
	seen := map[string]bool{}
	for i := range f.Providers {
		p := &f.Providers[i]
		if err := p.complete(); err != nil {
			errs = append(errs, fmt.Errorf("provider %d (%q): %w", i+1, p.Name, err))
			continue
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("provider %q is defined twice", p.Name))
		}
		seen[p.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("providers: %w", err)
	}
	return f.Providers, nil
}

// complete checks p and fills in its defaults.
func (p *Provider) complete() error {
	var errs []error
	if !providerName.MatchString(p.Name) {
		errs = append(errs, errors.New("name must be 1 to 40 of a-z, 0-9 and -, not starting or ending with -"))
	}
	u, err := url.Parse(p.BaseURL)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		errs = append(errs, fmt.Errorf("base_url %q must be an absolute http or https URL", p.BaseURL))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("base_url %q must have no user, query or fragment", p.BaseURL))
	default:
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		p.base = u
	}
	if p.Query != "" {
		if p.Header != "" {
			errs = append(errs, errors.New("set header or query, not both"))
		}
		if p.Format == "" {
			p.Format = keyPlaceholder
		}
	} else {
		if p.Header == "" {
			p.Header = "Authorization"
		}
		if !headerName.MatchString(p.Header) {
			errs = append(errs, fmt.Errorf("header %q is not a header name", p.Header))
		}
		if p.Format == "" {
			p.Format = "Bearer " + keyPlaceholder
		}
	}
	if strings.Count(p.Format, keyPlaceholder) != 1 || strings.ContainsAny(p.Format, "\r\n") {
		errs = append(errs, fmt.Errorf("format %q must hold %s once, on one line", p.Format, keyPlaceholder))
	}
	if err := secrets.CheckName(p.Secret); err != nil {
		errs = append(errs, fmt.Errorf("secret: %w", err))
	}
	if p.RequestsPerMinute == 0 {
		p.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if p.Burst == 0 {
		p.Burst = max(1, p.RequestsPerMinute/10)
	}
	if p.MaxConcurrent == 0 {
		p.MaxConcurrent = DefaultMaxConcurrent
	}
	if p.MaxRequestBytes == 0 {
		p.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if p.HeaderTimeout == 0 {
		p.HeaderTimeout = DefaultHeaderTimeout
	}
	if p.RequestsPerMinute < 0 || p.Burst < 0 || p.MaxConcurrent < 0 || p.MaxRequestBytes < 0 || p.HeaderTimeout < 0 {
		errs = append(errs, errors.New("limits must be positive"))
	}
	return errors.Join(errs...)
}

// target is the upstream URL of a call's escaped path below the provider
// (rest, without its leading slash) and its query. Every segment must be
// a plain name: ".", ".." and encoded slashes, backslashes or NULs could
// lead an upstream outside the base URL, so they are refused.
func (p *Provider) target(rest, rawQuery string) (*url.URL, error) {
	for seg := range strings.SplitSeq(rest, "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\\x00") {
			return nil, fmt.Errorf("path segment %q is not allowed", seg)
		}
	}
	u := *p.base
	u.RawPath = ""
	esc := p.base.EscapedPath()
	if rest != "" {
		esc += "/" + rest
	}
	path, err := url.PathUnescape(esc)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawPath = path, esc
	u.RawQuery = rawQuery
	if u.EscapedPath() != esc || !strings.HasPrefix(u.Path, p.base.Path) {
		return nil, errors.New("the path leaves the provider's base URL")
	}
	return &u, nil
}

// credential is the value of the key's header or query parameter.
func (p *Provider) credential(key []byte) string {
	return strings.Replace(p.Format, keyPlaceholder, string(key), 1)
}

// inject puts the credential on an outgoing request, replacing any the
// caller sent in the same place.
func (p *Provider) inject(r *http.Request, cred string) {
	if p.Query == "" {
		r.Header.Set(p.Header, cred)
		return
	}
	q := r.URL.Query()
	q.Set(p.Query, cred)
	r.URL.RawQuery = q.Encode()
}
