package errdefs

import "net/http"

// HTTPStatus is the one map from an error's class to an HTTP status. The
// API server and the agent both answer through it, and FromHTTP turns an
// answer back into the same class on the client side.
func HTTPStatus(err error) (status int, code, message string) {
	class, code, message := Classify(err)
	switch class {
	case ErrInvalid:
		return http.StatusBadRequest, code, message
	case ErrUnauthorized:
		return http.StatusUnauthorized, code, message
	case ErrForbidden:
		return http.StatusForbidden, code, message
	case ErrNotFound:
		return http.StatusNotFound, code, message
	case ErrConflict:
		return http.StatusConflict, code, message
	case ErrTooLarge:
		return http.StatusRequestEntityTooLarge, code, message
	case ErrUnsupported:
		return http.StatusNotImplemented, code, message
	case ErrUnavailable:
		return http.StatusServiceUnavailable, code, message
	}
	return http.StatusInternalServerError, code, message
}

// FromHTTP rebuilds a classified error from an error answer.
func FromHTTP(status int, code, message string) *Error {
	class := error(nil)
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		class = ErrInvalid
	case http.StatusUnauthorized:
		class = ErrUnauthorized
	case http.StatusForbidden:
		class = ErrForbidden
	case http.StatusNotFound:
		class = ErrNotFound
	case http.StatusConflict:
		class = ErrConflict
	case http.StatusRequestEntityTooLarge:
		class = ErrTooLarge
	case http.StatusNotImplemented:
		class = ErrUnsupported
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		class = ErrUnavailable
	default:
		return &Error{Class: errInternal, Code: code, Message: message}
	}
	return &Error{Class: class, Code: code, Message: message}
}

// errInternal classes an error answer with a status outside the map.
var errInternal = internalError{}

type internalError struct{}

func (internalError) Error() string { return "internal" }
