package e2b

import (
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// writeInfo is envd's answer for each file an upload wrote.
type writeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// fileCall is the call of a /files request, its user from the username
// query parameter (as envd takes it there) and checked by filesAs.
func (h *Handler) fileCall(w http.ResponseWriter, r *http.Request) (call, bool) {
	c := callFrom(r.Context())
	if u := r.URL.Query().Get("username"); u != "" {
		c.user = u
	}
	var err error
	if c.root, err = userRoot(c.user); err == nil {
		err = h.filesAs(r.Context(), c)
	}
	if err != nil {
		h.writeError(w, r, err)
		return c, false
	}
	return c, true
}

// download is envd's GET /files?path=: the file's bytes.
func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	c, ok := h.fileCall(w, r)
	if !ok {
		return
	}
	p := r.URL.Query().Get("path")
	if p == "" {
		h.writeError(w, r, errdefs.Invalid("missing_path", "the path query parameter is required"))
		return
	}
	fi, err := h.cfg.Sandboxes.StatFile(r.Context(), c.sandbox, p)
	if err == nil && fi.Type == api.FileDir {
		err = errdefs.Invalid("is_directory", "%s is a directory", p)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	body, err := h.cfg.Sandboxes.ReadFile(r.Context(), c.sandbox, p)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(fi.Path)}))
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size, 10))
	if _, err := io.Copy(w, body); err != nil {
		h.cfg.Log.Debug("e2b: download ended early", "sandbox", c.sandbox, "path", p, "err", err)
	}
}

// upload is envd's POST /files: a multipart form of "file" parts (each
// named by the path query parameter, or by its own file name when the
// request writes several), or, with Content-Type application/octet-stream,
// one file's bytes (gzip-encoded when Content-Encoding says so).
// Directories above a file are made as needed.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) {
	c, ok := h.fileCall(w, r)
	if !ok {
		return
	}
	target := r.URL.Query().Get("path")
	var written []writeInfo
	write := func(p string, body io.Reader) error {
		if p == "" {
			return errdefs.Invalid("missing_path", "a file needs a path: the path query parameter, or the part's file name")
		}
		fi, err := h.cfg.Sandboxes.WriteFile(r.Context(), c.sandbox, p, "", true, body)
		if err != nil {
			return err
		}
		written = append(written, writeInfo{Name: path.Base(fi.Path), Type: "file", Path: fi.Path})
		return nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	switch mt {
	case "application/octet-stream":
		err = h.uploadRaw(r, target, write)
	case "multipart/form-data":
		err = h.uploadForm(r, target, write)
	default:
		err = errdefs.Invalid("invalid_content_type", "an upload is multipart/form-data or application/octet-stream, not %q", mt)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, written)
}

func (h *Handler) uploadRaw(r *http.Request, target string, write func(string, io.Reader) error) error {
	var body io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return errdefs.Invalid("invalid_gzip", "the body is not gzip: %v", err)
		}
		defer zr.Close()
		body = zr
	default:
		return errdefs.Invalid("invalid_content_encoding", "Content-Encoding %q: only gzip", enc)
	}
	return write(target, body)
}

func (h *Handler) uploadForm(r *http.Request, target string, write func(string, io.Reader) error) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return errdefs.Invalid("invalid_multipart", "the body is not a multipart form: %v", err)
	}
	files := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errdefs.Invalid("invalid_multipart", "reading the form: %v", err)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		p := target
		if p == "" {
			// The SDK names a part by its path; FileName would keep only
			// the last element of it.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p = params["filename"]
		}
		err = write(p, part)
		part.Close()
		if err != nil {
			return err
		}
		files++
	}
	if files == 0 {
		return errdefs.Invalid("no_files", "the form has no file part")
	}
	return nil
}
