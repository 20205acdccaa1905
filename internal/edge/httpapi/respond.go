package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// writeError is the one place an error becomes an HTTP answer: its class
// picks the status, its code and user-safe message form the body, and the
// internal detail goes to the log only.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	if status >= 500 {
		a.cfg.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	if d := errdefs.RetryAfter(err); d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(d, time.Second)/time.Second)))
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
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return errdefs.Invalid("invalid_json", "request body must be %s, not %s", jsonKind(typeErr.Type), article(typeErr.Value))
	case errors.As(err, &typeErr):
		return errdefs.Invalid("invalid_json", "field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type), article(typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errdefs.Invalid("unknown_field", "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errdefs.Invalid("invalid_json", "request body could not be decoded")
}

// jsonKind names what JSON value decodes into t, for a person: never a Go
// type's name.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// article puts "a" or "an" before the kind of JSON value the decoder
// found ("string", "number 1.5", "array"…).
func article(v string) string {
	if v == "" {
		return "something else"
	}
	if strings.ContainsRune("aeiou", rune(v[0])) {
		return "an " + v
	}
	return "a " + v
}
