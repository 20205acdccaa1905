package e2b

import (
	"encoding/json"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// restError is E2B's error body: the HTTP status again as code, a
// message, and hutch's own stable code in error_code.
type restError struct {
	Code      int    `json:"code"`
	ErrorCode string `json:"error_code,omitempty"`
	Message   string `json:"message"`
}

// writeError answers err the way E2B's APIs do, with hutch's status for it.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	if status >= 500 && status != http.StatusNotImplemented {
		h.cfg.Log.Error("e2b request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	writeJSON(w, status, restError{Code: status, ErrorCode: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// connectCodes maps hutch's classes of error to Connect's codes, which the
// SDK turns into its own errors (NotFound → NotFoundError, and so on).
var connectCodes = []struct {
	class error
	code  connect.Code
}{
	{errdefs.ErrInvalid, connect.CodeInvalidArgument},
	{errdefs.ErrNotFound, connect.CodeNotFound},
	{errdefs.ErrConflict, connect.CodeAlreadyExists},
	{errdefs.ErrForbidden, connect.CodePermissionDenied},
	{errdefs.ErrUnauthorized, connect.CodeUnauthenticated},
	{errdefs.ErrTooLarge, connect.CodeResourceExhausted},
	{errdefs.ErrInsufficientStorage, connect.CodeResourceExhausted},
	{errdefs.ErrRateLimited, connect.CodeResourceExhausted},
	{errdefs.ErrUnsupported, connect.CodeUnimplemented},
	{errdefs.ErrUnavailable, connect.CodeUnavailable},
}

// rpcError turns err into a Connect error with hutch's message, its code
// prefixed ("[not_found] …") so a client can tell causes apart.
func (h *Handler) rpcError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	_, code, msg := errdefs.HTTPStatus(err)
	for _, c := range connectCodes {
		if errors.Is(err, c.class) {
			return connect.NewError(c.code, errors.New(code+": "+msg))
		}
	}
	h.cfg.Log.Error("e2b call failed", "code", code, "err", err)
	return connect.NewError(connect.CodeInternal, errors.New(code+": "+msg))
}
