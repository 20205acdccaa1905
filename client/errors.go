package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hutchdev/hutch/api"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Error is an error answer of the server: the HTTP status and the API's
// stable error code (such as "sandbox_not_found" or "invalid_path") and
// message. Match it with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == "file_exists" { … }
//
// or with the helpers IsNotFound, IsConflict, IsUnauthorized, IsForbidden
// and Code. An answer whose body is not the API's error shape (a proxy's
// HTML page) has an empty Code and a Message made from the status and the
// start of the body.
type Error struct {
	StatusCode int
	Code       string
	Message    string
}

// Error returns "message (code)", the form the CLI prints.
func (e *Error) Error() string {
	switch {
	case e.Code == "":
		return e.Message
	case e.Message == "":
		return e.Code
	}
	return e.Message + " (" + e.Code + ")"
}

// Code returns the API error code of err, or "" when err is not an *Error.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// StatusCode returns the HTTP status of err, or 0 when err is not an
// *Error.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// IsNotFound reports whether err is a 404 answer: an unknown sandbox, key
// or file.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict reports whether err is a 409 answer: the resource is not in a
// state that allows the call (sandbox_not_running, file_exists,
// directory_not_empty, …).
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// IsUnauthorized reports whether err is a 401 answer: the API key is
// missing or wrong.
func IsUnauthorized(err error) bool { return StatusCode(err) == http.StatusUnauthorized }

// IsForbidden reports whether err is a 403 answer: the key may not do this.
func IsForbidden(err error) bool { return StatusCode(err) == http.StatusForbidden }

// IsInvalid reports whether err is a 400 or 422 answer: the request itself
// is wrong and retrying it unchanged will fail again.
func IsInvalid(err error) bool {
	s := StatusCode(err)
	return s == http.StatusBadRequest || s == http.StatusUnprocessableEntity
}

// readError turns a non-2xx answer into an *Error. It does not close the
// body.
func readError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{StatusCode: resp.StatusCode}
	var body api.Error
	if jerr := json.Unmarshal(b, &body); jerr == nil && body.Error.Code != "" {
		e.Code = body.Error.Code
		e.Message = body.Error.Message
		return e
	}
	e.Message = fmt.Sprintf("server answered %s", resp.Status)
	if s := snippet(b); s != "" {
		e.Message += ": " + s
	} else if err != nil {
		e.Message += " (reading the body: " + err.Error() + ")"
	}
	return e
}

// snippet is the start of a non-API error body, on one line, for a
// message.
func snippet(b []byte) string {
	const max = 200
	if !utf8.Valid(b) {
		return ""
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// errNoID is returned, without a request, by calls given an empty id.
var errNoID = errors.New("client: empty id")
