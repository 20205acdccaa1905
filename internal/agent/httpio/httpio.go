// Package httpio is what every part of the agent's server reads requests
// and answers with: a JSON body read within a bound, a JSON answer, and an
// error answered as agentproto.Error with the status its errdefs class
// gives. It also holds ErrBodyUnverified, what a request body ends with
// when it does not match its signature (the server's authentication puts
// such a body in place), so a handler can tell it from any other error.
package httpio

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// ErrBodyUnverified is what reading a body that does not match its
// signature ends with, in place of io.EOF: a handler that reads to the
// end before it commits (JSON, file writes) then commits nothing.
var ErrBodyUnverified = errdefs.New(errdefs.ErrUnauthorized, "unauthorized", "the request's body does not match its signature")

// DrainVerified reads what is left of a body to its end, so its signature
// is checked, and returns ErrBodyUnverified if it does not match; a
// handler whose reader may stop before the end (a tar reader stops at the
// archive's end marker) calls it before it answers.
func DrainVerified(body io.Reader) error {
	_, err := io.Copy(io.Discard, body)
	return err
}

// WriteError answers err as an agentproto.Error with the status errdefs
// gives its class. Internal detail goes to log only.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	if status >= 500 {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	WriteJSON(w, status, agentproto.Error{Error: agentproto.ErrorBody{Code: code, Message: msg}})
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// DecodeJSON reads one JSON value of at most limit bytes into v. Fields
// it does not know are ignored: a newer control plane may send them, and
// gates on the agent's features whatever needs them understood.
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	err := dec.Decode(v)
	if err == nil {
		// To the end, so a signed body's check runs.
		if err := dec.Decode(&struct{}{}); err != io.EOF {
			if errors.Is(err, ErrBodyUnverified) {
				return err
			}
			return errdefs.Invalid("invalid_json", "the request body holds more than one JSON value")
		}
		return nil
	}
	if errors.Is(err, ErrBodyUnverified) {
		return err
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errdefs.New(errdefs.ErrTooLarge, "request_too_large", "the request body is larger than %d bytes", limit)
	}
	return errdefs.Wrap(errdefs.ErrInvalid, "invalid_json", err, "the request body is not valid JSON: %s", err.Error())
}
