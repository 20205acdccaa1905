package httpapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agentclient"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// withAgent resolves the sandbox's agent or answers the error.
func (a *API) withAgent(w http.ResponseWriter, r *http.Request) (*agentclient.Client, bool) {
	c, err := a.cfg.Sandboxes.Agent(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return nil, false
	}
	return c, true
}

// answer writes v as JSON with status, or err.
func (a *API) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

// stream copies an agent's body to the client.
func (a *API) stream(w http.ResponseWriter, r *http.Request, contentType string, body io.ReadCloser, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, err := io.Copy(w, body); err != nil {
		a.cfg.Log.Debug("file stream ended early", "sandbox.id", r.PathValue("id"), "err", err)
	}
}

func (a *API) readFile(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.withAgent(w, r); ok {
		body, err := c.ReadFile(r.Context(), r.URL.Query().Get("path"))
		a.stream(w, r, "application/octet-stream", body, err)
	}
}

func (a *API) writeFile(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.withAgent(w, r); ok {
		q := r.URL.Query()
		fi, err := c.WriteFile(r.Context(), q.Get("path"), q.Get("mode"), r.Body)
		a.answer(w, r, http.StatusOK, fi, err)
	}
}

func (a *API) removeFile(w http.ResponseWriter, r *http.Request) {
	c, ok := a.withAgent(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	recursive, err := queryBool(q.Get("recursive"))
	if err == nil {
		err = c.Remove(r.Context(), q.Get("path"), recursive)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) listFiles(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.withAgent(w, r); ok {
		list, err := c.List(r.Context(), r.URL.Query().Get("path"))
		a.answer(w, r, http.StatusOK, list, err)
	}
}

func (a *API) statFile(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.withAgent(w, r); ok {
		fi, err := c.Stat(r.Context(), r.URL.Query().Get("path"))
		a.answer(w, r, http.StatusOK, fi, err)
	}
}

func (a *API) mkdir(w http.ResponseWriter, r *http.Request) {
	var req api.MkdirRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if c, ok := a.withAgent(w, r); ok {
		fi, err := c.Mkdir(r.Context(), req)
		a.answer(w, r, http.StatusOK, fi, err)
	}
}

func (a *API) move(w http.ResponseWriter, r *http.Request) {
	var req api.MoveRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if c, ok := a.withAgent(w, r); ok {
		fi, err := c.Move(r.Context(), req)
		a.answer(w, r, http.StatusOK, fi, err)
	}
}

func (a *API) downloadTar(w http.ResponseWriter, r *http.Request) {
	if c, ok := a.withAgent(w, r); ok {
		body, err := c.TarDownload(r.Context(), r.URL.Query().Get("path"))
		a.stream(w, r, "application/x-tar", body, err)
	}
}

func (a *API) uploadTar(w http.ResponseWriter, r *http.Request) {
	c, ok := a.withAgent(w, r)
	if !ok {
		return
	}
	body := &limitedBody{r: r.Body, left: a.cfg.MaxTarBytes}
	res, err := c.TarUpload(r.Context(), r.URL.Query().Get("path"), body)
	if body.over {
		err = errdefs.New(errdefs.ErrTooLarge, "body_too_large", "tar upload is over %d bytes", a.cfg.MaxTarBytes)
	}
	a.answer(w, r, http.StatusOK, res, err)
}

// limitedBody fails reads past a byte budget and remembers that it did.
type limitedBody struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		if n, _ := l.r.Read(make([]byte, 1)); n > 0 {
			l.over = true
			return 0, errdefs.New(errdefs.ErrTooLarge, "body_too_large", "body too large")
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func queryBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, errdefs.Invalid("invalid_request", "%q is not true or false", s)
	}
	return b, nil
}
