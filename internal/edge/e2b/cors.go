package e2b

import (
	"net/http"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// withCORS lets a web page call the E2B APIs, as the SDK does when it runs
// in a browser: any origin, the headers the SDK and Connect send and read,
// and no cookies. Nothing here is authorised by a browser's ambient
// credentials: the key and the envd token are headers the page sets
// itself, so a page can use only what it was given.
func withCORS(next http.Handler) http.Handler {
	return cors.New(cors.Options{
		AllowedOrigins: []string{"*"},
		AllowedMethods: append(connectcors.AllowedMethods(), http.MethodPut, http.MethodDelete, http.MethodPatch),
		AllowedHeaders: append(connectcors.AllowedHeaders(),
			"X-API-KEY", "X-Access-Token", "E2b-Sandbox-Id", "E2b-Sandbox-Port", "Authorization",
			"Keepalive-Ping-Interval", "Content-Encoding", "User-Agent"),
		ExposedHeaders: append(connectcors.ExposedHeaders(), "X-Next-Token", "Content-Disposition", "Content-Length"),
		MaxAge:         7200,
		// A page on the public web may call a hutch on a private network
		// (Chromium's Private Network Access asks first); it gets in only
		// with a key or token it holds.
		AllowPrivateNetwork: true,
	}).Handler(next)
}
