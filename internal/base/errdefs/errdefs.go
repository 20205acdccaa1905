// Package errdefs owns hutch's error classes. Every error that reaches a
// user is wrapped around one of the classes here; internal/edge/httpapi maps the
// class to an HTTP status in exactly one place. An *Error carries a stable
// machine code and a message that is safe to show a user, apart from the
// internal detail that only reaches the logs.
package errdefs

import (
	"errors"
	"fmt"
	"time"
)

// The classes. Wrap them with %w (or use the constructors below); test with
// errors.Is.
var (
	ErrInvalid      = errors.New("invalid")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrForbidden    = errors.New("forbidden")
	ErrUnauthorized = errors.New("unauthorized")
	ErrTooLarge     = errors.New("too large")
	ErrUnavailable  = errors.New("unavailable")
	ErrUnsupported  = errors.New("unsupported")
	ErrRateLimited  = errors.New("rate limited")
	// ErrMethodNotAllowed: the resource exists, not under that method.
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrInsufficientStorage: a filesystem the server writes to is full.
	ErrInsufficientStorage = errors.New("insufficient storage")
)

// Error is a classified error with a stable code and a user-safe message.
type Error struct {
	Class   error  // one of the classes above
	Code    string // stable, snake_case, e.g. "sandbox_not_found"
	Message string // safe to show a user
	Err     error  // internal cause, logged, never shown
	// RetryAfter, when set, is how long a caller should wait before
	// trying again (an answer's Retry-After): the condition is expected
	// to pass.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap lets errors.Is find both the class and the cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Class, e.Err}
	}
	return []error{e.Class}
}

// New returns a classified error with a formatted user-safe message.
func New(class error, code, format string, args ...any) *Error {
	return &Error{Class: class, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap classifies cause; the cause stays internal.
func Wrap(class error, code string, cause error, format string, args ...any) *Error {
	return &Error{Class: class, Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// Invalid, NotFound, … are shorthands for New with their class.
func Invalid(code, format string, args ...any) *Error { return New(ErrInvalid, code, format, args...) }

func NotFound(code, format string, args ...any) *Error {
	return New(ErrNotFound, code, format, args...)
}

func Conflict(code, format string, args ...any) *Error {
	return New(ErrConflict, code, format, args...)
}

func Forbidden(code, format string, args ...any) *Error {
	return New(ErrForbidden, code, format, args...)
}

func Unavailable(code, format string, args ...any) *Error {
	return New(ErrUnavailable, code, format, args...)
}

// Classify returns the class, code and user message of err. Errors that
// carry no class are internal: their message is never shown.
func Classify(err error) (class error, code, message string) {
	var e *Error
	if errors.As(err, &e) {
		if e.Class == errInternal {
			return nil, e.Code, e.Message
		}
		return e.Class, e.Code, e.Message
	}
	for _, c := range []error{ErrInvalid, ErrNotFound, ErrConflict, ErrForbidden, ErrUnauthorized, ErrTooLarge, ErrUnavailable, ErrUnsupported, ErrRateLimited, ErrMethodNotAllowed, ErrInsufficientStorage} {
		if errors.Is(err, c) {
			return c, codeOf(c), c.Error()
		}
	}
	return nil, "internal", "internal error"
}

func codeOf(class error) string {
	switch class {
	case ErrInvalid:
		return "invalid_request"
	case ErrNotFound:
		return "not_found"
	case ErrConflict:
		return "conflict"
	case ErrForbidden:
		return "forbidden"
	case ErrUnauthorized:
		return "unauthorized"
	case ErrTooLarge:
		return "too_large"
	case ErrUnavailable:
		return "unavailable"
	case ErrUnsupported:
		return "unsupported"
	case ErrRateLimited:
		return "rate_limited"
	case ErrMethodNotAllowed:
		return "method_not_allowed"
	case ErrInsufficientStorage:
		return "insufficient_storage"
	}
	return "internal"
}

// RetryAfter is how long the caller of what failed with err should
// wait before trying again, when err's classified error says (Error's
// RetryAfter); 0 otherwise.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// HasCode reports whether err carries a classified error with code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
