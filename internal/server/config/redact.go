package config

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted stands in for a password.
const redacted = "xxxxx"

// kvPassword is a password in libpq's key=value form, quoted or not.
var kvPassword = regexp.MustCompile(`\b(password|sslpassword)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

// StoreURLRedacted is StoreURL safe to log or show: a URL's password,
// whether in its user part or in its password or sslpassword
// parameter, and a key=value string's, are replaced by xxxxx. A URL
// that does not parse is withheld whole.
func (c Config) StoreURLRedacted() string {
	s := c.StoreURL
	if !strings.Contains(s, "://") {
		return kvPassword.ReplaceAllString(s, "$1="+redacted)
	}
	u, err := url.Parse(s)
	if err != nil {
		return redacted
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, k := range []string{"password", "sslpassword"} {
			if q.Has(k) {
				q.Set(k, redacted)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
