package errdefs

import "net/http"

// statuses is the one map between error classes and HTTP statuses. The API
// server and the agent answer through HTTPStatus; clients turn answers back
// into classes with FromHTTP.
var statuses = []struct {
	class  error
	status int
}{
	{ErrInvalid, http.StatusBadRequest},
	{ErrUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, http.StatusForbidden},
	{ErrNotFound, http.StatusNotFound},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed},
	{ErrConflict, http.StatusConflict},
	{ErrTooLarge, http.StatusRequestEntityTooLarge},
	{ErrUnsupported, http.StatusNotImplemented},
	{ErrUnavailable, http.StatusServiceUnavailable},
	{ErrRateLimited, http.StatusTooManyRequests},
	{ErrInsufficientStorage, http.StatusInsufficientStorage},
}

// HTTPStatus returns the status, code and user-safe message for err.
func HTTPStatus(err error) (status int, code, message string) {
	class, code, message := Classify(err)
	for _, s := range statuses {
		if s.class == class {
			return s.status, code, message
		}
	}
	return http.StatusInternalServerError, code, message
}

// FromHTTP rebuilds a classified error from an error answer. Statuses a
// proxy may answer with (422, 502, 504) join the nearest class.
func FromHTTP(status int, code, message string) *Error {
	switch status {
	case http.StatusUnprocessableEntity:
		status = http.StatusBadRequest
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		status = http.StatusServiceUnavailable
	}
	for _, s := range statuses {
		if s.status == status {
			return &Error{Class: s.class, Code: code, Message: message}
		}
	}
	return &Error{Class: errInternal, Code: code, Message: message}
}

// errInternal classes an error answer with a status outside the map.
var errInternal = internalError{}

type internalError struct{}

func (internalError) Error() string { return "internal" }
