// Package previewhost owns what the operator may configure for previews:
// the preview domain that preview hosts sit under and the public URL
// clients reach them at. It imports nothing of hutch, so the router and
// the server's configuration can both check them.
package previewhost

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ValidDomain checks a preview domain: a DNS name of one or more labels
// (letters, digits and inner hyphens, 63 bytes at most each), without a
// port or a trailing dot, short enough that a preview host under it fits
// in 253 bytes. Case does not matter; the router lowers it.
func ValidDomain(d string) error {
	const longestLabel = len("65535-") + 26 + len(".")
	switch {
	case d == "":
		return errors.New("the preview domain must be set")
	case len(d)+longestLabel > 253:
		return fmt.Errorf("preview domain %q is too long for a preview host under it", d)
	}
	for _, l := range strings.Split(strings.ToLower(d), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("preview domain %q: %q is not a DNS label", d, l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return fmt.Errorf("preview domain %q: %q is not a DNS label", d, l)
			}
		}
	}
	return nil
}

// ParsePublicURL checks a public URL for previews: http or https, the
// preview domain as its host (any port), nothing else.
func ParsePublicURL(raw, domain string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, fmt.Errorf("preview URL %q must be an http or https URL", raw)
	case !strings.EqualFold(u.Hostname(), domain):
		return nil, fmt.Errorf("preview URL %q must have the preview domain %q as its host", raw, domain)
	case u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("preview URL %q must be a scheme, the preview domain and a port at most", raw)
	}
	return u, nil
}
