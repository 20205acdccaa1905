package gateway

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// writeError answers err in the API's error shape.
func writeError(w http.ResponseWriter, err error) {
	status, code, msg := errdefs.HTTPStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
}

// upstreamError is err without the URL a *url.Error carries (which may
// hold a key in its query), for the log.
func upstreamError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout: " + err.Error()
	}
	return err.Error()
}

func errTooLarge(p *provider) error {
	return errdefs.New(errdefs.ErrTooLarge, "body_too_large", "a call to %s may send at most %d bytes", p.Name, p.MaxRequestBytes)
}
