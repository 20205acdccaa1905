package server

import (
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/internal/e2b"
)

// withE2B sends what is under e2b.Prefix to the E2B translation layer and
// the rest to the API.
func withE2B(compat, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == e2b.Prefix || strings.HasPrefix(r.URL.Path, e2b.Prefix+"/") {
			compat.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
