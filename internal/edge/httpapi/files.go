package httpapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
)

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
		a.cfg.Log.Debug("file stream ended early", logattr.Sandbox(r.PathValue("id")), "err", err)
	}
}

func (a *API) readFile(w http.ResponseWriter, r *http.Request) {
	body, err := a.cfg.Sandboxes.ReadFile(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"))
	a.stream(w, r, "application/octet-stream", body, err)
}

// writeFile answers PUT …/files: the body becomes the file at ?path=,
// atomically, with ?mode=; missing parent directories are made unless
// ?parents=false.
func (a *API) writeFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	parents := true
	if v := q.Get("parents"); v != "" {
		var err error
		if parents, err = queryBool(v); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	fi, err := a.cfg.Sandboxes.WriteFile(r.Context(), r.PathValue("id"), q.Get("path"), q.Get("mode"), parents, r.Body)
	a.answer(w, r, http.StatusOK, fi, err)
}

func (a *API) removeFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive, err := queryBool(q.Get("recursive"))
	if err == nil {
		err = a.cfg.Sandboxes.RemoveFile(r.Context(), r.PathValue("id"), q.Get("path"), recursive)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) listFiles(w http.ResponseWriter, r *http.Request) {
	list, err := a.cfg.Sandboxes.ListFiles(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"))
	a.answer(w, r, http.StatusOK, list, err)
}

func (a *API) statFile(w http.ResponseWriter, r *http.Request) {
	fi, err := a.cfg.Sandboxes.StatFile(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"))
	a.answer(w, r, http.StatusOK, fi, err)
}

func (a *API) mkdir(w http.ResponseWriter, r *http.Request) {
	var req api.MkdirRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	fi, err := a.cfg.Sandboxes.Mkdir(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusOK, fi, err)
}

func (a *API) move(w http.ResponseWriter, r *http.Request) {
	var req api.MoveRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	fi, err := a.cfg.Sandboxes.Move(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusOK, fi, err)
}

func (a *API) downloadTar(w http.ResponseWriter, r *http.Request) {
	body, err := a.cfg.Sandboxes.TarDownload(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"))
	a.stream(w, r, "application/x-tar", body, err)
}

func (a *API) uploadTar(w http.ResponseWriter, r *http.Request) {
	body := &limitedBody{r: r.Body, left: a.cfg.MaxTarBytes}
	res, err := a.cfg.Sandboxes.TarUpload(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"), body)
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
