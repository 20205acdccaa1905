package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// stripCredentials removes from an outgoing request everything that could
// carry the caller's credentials or name it: the headers keys go in, the
// provider's own key header, cookies, hutch's headers, and any header
// holding a sandbox token. (The reverse proxy already removed hop-by-hop
// and X-Forwarded-* headers.)
func stripCredentials(h http.Header, keyHeader string) {
	for _, k := range credentialHeaders {
		h.Del(k)
	}
	for _, k := range []string{keyHeader, "Proxy-Authorization", "Cookie", "Forwarded", "X-Real-Ip"} {
		if k != "" {
			h.Del(k)
		}
	}
	for k, vs := range h {
		if strings.HasPrefix(k, "X-Hutch-") || strings.HasPrefix(k, "X-Forwarded-") {
			delete(h, k)
			continue
		}
		for _, v := range vs {
			if strings.Contains(v, tokenPrefix) {
				delete(h, k)
				break
			}
		}
	}
}

// countingBody counts the bytes read through it.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
