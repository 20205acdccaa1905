// Package deadline lifts the server's read and write deadlines
// (--request-timeout) for the requests that may outlast them: the API's
// long routes, envd's calls through the E2B layer, previews and apps.
package deadline

import (
	"net/http"
	"time"
)

// Lift lifts the server's read and write deadlines for the request w
// answers: a stream, a transfer or a command that may run longer than an
// ordinary request may take. Call it before reading the body or writing.
func Lift(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}
