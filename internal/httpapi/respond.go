package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// writeError is the one place an error becomes an HTTP answer: its class
// picks the status, its code and user-safe message form the body, and the
// internal detail goes to the log only.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	if status >= 500 {
		a.cfg.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	writeJSON(w, status, api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Debug("write response", "err", err)
	}
}

// decodeJSON reads one JSON value into v, strictly: bounded size, no
// unknown fields, nothing after it. The Content-Type is not checked: the
// body must be JSON whatever it says (curl -d sends a form type).
func (a *API) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, a.cfg.MaxBodyBytes)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errdefs.Invalid("invalid_json", "request body must hold exactly one JSON value")
	}
	return nil
}

func jsonError(err error, limit int64) error {
	var maxErr *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &maxErr):
		return errdefs.New(errdefs.ErrTooLarge, "body_too_large", "request body is over %d bytes", limit)
	case errors.Is(err, io.EOF):
		return errdefs.Invalid("invalid_json", "request body is empty; send a JSON object")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return errdefs.Invalid("invalid_json", "request body is not valid JSON")
	case errors.As(err, &typeErr):
		return errdefs.Invalid("invalid_json", "field %q must be of type %s", typeErr.Field, typeErr.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errdefs.Invalid("unknown_field", "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errdefs.Invalid("invalid_json", "request body could not be decoded")
}
