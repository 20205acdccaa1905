package e2b

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/deadline"
	"github.com/hutchdev/hutch/internal/edge/e2b/envdpb/filesystem/filesystemconnect"
	"github.com/hutchdev/hutch/internal/edge/e2b/envdpb/process/processconnect"
)

// envdPrefix is where envd's API is mounted: E2B_SANDBOX_URL.
const envdPrefix = Prefix + "/envd"

// readOnly are the envd calls a reader key may make.
var readOnly = map[string]bool{
	"GET /files":  true,
	"GET /health": true,
	"POST " + processconnect.ProcessListProcedure:           true,
	"POST " + filesystemconnect.FilesystemStatProcedure:     true,
	"POST " + filesystemconnect.FilesystemListDirProcedure:  true,
	"POST " + filesystemconnect.FilesystemWatchDirProcedure: true,
}

// envdRoutes mounts envd's API: its two Connect services (Connect's JSON
// and binary protobuf, gRPC and gRPC-Web, as connect-go serves them) and
// its /files and /health routes.
func (h *Handler) envdRoutes() {
	for _, mount := range []func() (string, http.Handler){
		func() (string, http.Handler) { return processconnect.NewProcessHandler(processService{h}) },
		func() (string, http.Handler) { return filesystemconnect.NewFilesystemHandler(filesystemService{h}) },
	} {
		path, handler := mount()
		h.mux.Handle(envdPrefix+path, h.envdCall(http.StripPrefix(envdPrefix, handler)))
	}
	h.mux.Handle("GET "+envdPrefix+"/files", h.envdCall(http.HandlerFunc(h.download)))
	h.mux.Handle("POST "+envdPrefix+"/files", h.envdCall(http.HandlerFunc(h.upload)))
	h.mux.Handle("GET "+envdPrefix+"/health", h.envdCall(http.HandlerFunc(h.health)))
}

// call is who an envd call is for: the sandbox its headers name, and the
// user it asks to act as (E2B's Authorization: Basic <user>:).
type call struct {
	sandbox string
	user    string
	root    bool // the user is root (rpcCall and fileCall set it)
}

type callKey struct{}

func callFrom(ctx context.Context) call {
	c, _ := ctx.Value(callKey{}).(call)
	return c
}

// envdCall authenticates an envd call: E2b-Sandbox-Id names the sandbox
// and X-Access-Token must be its token, which names the key the call then
// acts as (ended when that key is revoked); a /files request may instead
// carry a signature made with the token (signed.go). A reader key reaches
// only the calls that change nothing.
func (h *Handler) envdCall(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline.Lift(w)
		id := r.Header.Get("E2b-Sandbox-Id")
		if id == "" {
			h.writeError(w, r, errdefs.New(errdefs.ErrUnauthorized, "missing_sandbox_id", "an envd call names its sandbox in the E2b-Sandbox-Id header"))
			return
		}
		var keyID string
		var err error
		if tok := r.Header.Get("X-Access-Token"); tok == "" && r.URL.Path == envdPrefix+"/files" && r.URL.Query().Has("signature") {
			keyID, err = h.signedKey(r, id)
		} else {
			keyID, err = h.tokens.verify(tok, id)
		}
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		ctx, end, err := h.cfg.Auth.BeginKey(r.Context(), keyID)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		defer end()
		p, _ := tenancy.From(ctx)
		least := api.RoleMember
		if readOnly[r.Method+" "+strings.TrimPrefix(r.URL.Path, envdPrefix)] {
			least = api.RoleReader
		}
		if err := p.May(least); err != nil {
			h.writeError(w, r, err)
			return
		}
		user, err := basicUser(r.Header.Get("Authorization"))
		if forwarded(r) {
			user, err = r.Header.Get(userHeader), nil
		}
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if h.cfg.Forward != nil && !forwarded(r) {
			r.Header.Set(userHeader, user)
			if h.elsewhere(w, r.WithContext(ctx), h.sandboxNode(ctx, id), keyID) {
				return
			}
			r.Header.Del(userHeader)
		}
		ctx = context.WithValue(ctx, callKey{}, call{sandbox: id, user: user})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// basicUser is the user name of E2B's Authorization: Basic <user>: header
// ("" without one).
func basicUser(header string) (string, error) {
	enc, ok := strings.CutPrefix(header, "Basic ")
	if !ok {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", errdefs.Invalid("invalid_user", "the Authorization header is not Basic <base64 user:>")
	}
	user, _, _ := strings.Cut(string(b), ":")
	return user, nil
}

// userRoot says whether E2B's user asks for root. A hutch sandbox has one
// account besides root: E2B's "user" (its default) is that account,
// "root" is root (a command runs as root on asking, in any sandbox whose
// driver can give it); other names are refused.
func userRoot(user string) (bool, error) {
	switch user {
	case "", "user":
		return false, nil
	case "root":
		return true, nil
	}
	return false, errdefs.Invalid("unknown_user", "user %q: a hutch sandbox has its user (\"user\") and root", user)
}

// filesAs checks that the call may touch files as its user: hutch's files
// API acts as the sandbox's own account, so root is that account only in a
// sandbox created as root.
func (h *Handler) filesAs(ctx context.Context, c call) error {
	if !c.root {
		return nil
	}
	sb, err := h.cfg.Sandboxes.Get(ctx, c.sandbox)
	if err != nil {
		return err
	}
	if !sb.Root {
		return errdefs.Forbidden("files_not_root", "sandbox %s handles files as its user, not root: create it as root (hutch API, root: true) to write as root, or use a command run as root", c.sandbox)
	}
	return nil
}

// health answers envd's GET /health: 204 while the sandbox runs, 502 when
// it does not (which the SDK reads as "not running").
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	sb, err := h.cfg.Sandboxes.Get(r.Context(), callFrom(r.Context()).sandbox)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if sb.State != api.StateRunning {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rpcCall returns the call a Connect request is for, its user checked.
func (h *Handler) rpcCall(ctx context.Context) (call, error) {
	c := callFrom(ctx)
	root, err := userRoot(c.user)
	if err != nil {
		return c, h.rpcError(err)
	}
	c.root = root
	return c, nil
}
