package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/forward"
)

// controlRoutes mounts E2B's control API: what the SDK's Sandbox class
// calls on E2B_API_URL.
func (h *Handler) controlRoutes() {
	routes := []struct {
		pattern string
		least   string
		fn      func(w http.ResponseWriter, r *http.Request, p tenancy.Principal)
	}{
		{"POST /v2/sandboxes", api.RoleMember, h.create},
		{"POST /sandboxes", api.RoleMember, h.create},
		{"GET /v2/sandboxes", api.RoleReader, h.list},
		{"GET /sandboxes", api.RoleReader, h.list},
		{"GET /sandboxes/{id}", api.RoleReader, h.get},
		{"DELETE /sandboxes/{id}", api.RoleMember, h.kill},
		{"POST /sandboxes/{id}/timeout", api.RoleMember, h.setTimeout},
		{"POST /sandboxes/{id}/pause", api.RoleMember, h.pause},
		{"POST /v2/sandboxes/{id}/connect", api.RoleMember, h.connect},
		{"POST /sandboxes/{id}/connect", api.RoleMember, h.connect},
		{"POST /sandboxes/{id}/resume", api.RoleMember, h.connect},
		{"GET /sandboxes/{id}/metrics", api.RoleReader, h.metrics},
		{"PUT /sandboxes/{id}/network", api.RoleMember, h.network},
		{"POST /sandboxes/{id}/snapshots", api.RoleMember, h.snapshot},
		{"GET /snapshots", api.RoleReader, h.snapshots},
		{"DELETE /templates/{id}", api.RoleMember, h.deleteSnapshot},
		{"POST /sandboxes/{id}/fork", api.RoleMember, h.fork},
	}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		h.mux.HandleFunc(method+" "+Prefix+path, h.withKey(rt.least, rt.fn))
	}
	h.mux.HandleFunc("GET "+Prefix+"/health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
}

// withKey authenticates a control call by its X-API-KEY, a hutch key.
func (h *Handler) withKey(least string, fn func(http.ResponseWriter, *http.Request, tenancy.Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-API-KEY")
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		var ctx context.Context
		var end func()
		var err error
		if hop, ok := forward.HopFrom(r.Context()); ok {
			// Another node authenticated the key, and forwarded its id.
			ctx, end, err = h.cfg.Auth.BeginKey(r.Context(), hop.KeyID)
		} else {
			ctx, end, err = h.cfg.Auth.Begin(r.Context(), "Bearer "+key)
		}
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		defer end()
		p, _ := tenancy.From(ctx)
		if err := p.May(least); err != nil {
			h.writeError(w, r, err)
			return
		}
		r = r.WithContext(ctx)
		if id := r.PathValue("id"); id != "" && h.cfg.Forward != nil && !forwarded(r) {
			node := h.sandboxNode(ctx, id)
			if strings.HasPrefix(r.Pattern, "DELETE "+Prefix+"/templates/") {
				node = h.snapshotNode(ctx, id) // E2B's snapshots are its templates
			}
			if h.elsewhere(w, r, node, p.KeyID) {
				return
			}
		}
		fn(w, r, p)
	}
}

// decode reads a JSON body into v. Fields hutch does not know are
// ignored, as E2B's API adds them over time; the ones that would change
// what the sandbox is are refused where they are read.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return errdefs.New(errdefs.ErrTooLarge, "body_too_large", "request body is over %d bytes", h.cfg.MaxBodyBytes)
	case err != nil:
		return errdefs.Invalid("invalid_body", "reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errdefs.Invalid("invalid_json", "request body: %v", err)
	}
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
	var in newSandbox
	if err := h.decode(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	req, err := h.createRequest(r.Context(), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// In a fleet it is placed, as the API's creates are (one from a
	// snapshot is made where the snapshot's files are).
	if h.cfg.Place != nil {
		sent, err := h.cfg.Place(w, r, req, in)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if sent {
			return
		}
	}
	sb, err := h.cfg.Sandboxes.Create(r.Context(), req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, h.ref(sb, p.KeyID))
}

// createRequest translates E2B's NewSandbox into hutch's create request.
// The template "base" (and none) is the server's default template; a
// template id that names one of the tenant's snapshots starts from it, as
// E2B starts a sandbox from a snapshot.
func (h *Handler) createRequest(ctx context.Context, in newSandbox) (api.CreateSandboxRequest, error) {
	req := api.CreateSandboxRequest{Labels: in.Metadata, Env: in.EnvVars}
	switch {
	case len(in.MCP) > 0:
		return req, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "mcp: hutch runs no MCP gateway in its sandboxes")
	case len(in.VolumeMounts) > 0:
		return req, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "volumeMounts: mount hutch volumes through hutch's API (POST /v1/sandboxes, volumes)")
	case len(in.IAM) > 0:
		return req, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "iam: use hutch's provider gateway and secrets")
	case in.AutoResume != nil && in.AutoResume.Enabled:
		return req, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "autoResume: hutch resumes a paused sandbox on connect, not on traffic")
	}
	if in.Timeout != nil {
		if *in.Timeout <= 0 {
			return req, errdefs.Invalid("invalid_timeout", "timeout must be a positive number of seconds")
		}
		req.TimeoutS = *in.Timeout
	}
	if in.AutoPause != nil && *in.AutoPause {
		req.OnExpiry = api.OnExpiryPause
		if in.AutoPauseMemory != nil && !*in.AutoPauseMemory {
			req.OnExpiry = api.OnExpiryStop
		}
	}
	pol, err := policyOf(in.AllowInternetAccess, in.Network)
	if err != nil {
		return req, err
	}
	req.Network = pol
	if in.TemplateID != "" && in.TemplateID != "base" {
		if snap, err := h.cfg.Sandboxes.GetSnapshot(ctx, in.TemplateID); err == nil {
			req.Snapshot = snap.ID
		} else if errors.Is(err, errdefs.ErrNotFound) {
			req.Template = in.TemplateID
		} else {
			return req, err
		}
	}
	return req, nil
}

// policyOf translates E2B's network settings into an egress policy; nil
// keeps the server's default. allowOut becomes an allowlist; denyOut can
// only say "everything" (0.0.0.0/0), hutch has no deny list.
func policyOf(allowInternet *bool, n *networkConfig) (*api.NetworkPolicy, error) {
	if n != nil {
		for _, d := range n.DenyOut {
			if d != allTraffic {
				return nil, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "denyOut %q: hutch's egress policy is an allowlist; denyOut may only be %s", d, allTraffic)
			}
		}
		if n.Rules != nil || n.EgressProxy != nil || n.MaskRequestHost != nil {
			return nil, errdefs.New(errdefs.ErrUnsupported, "e2b_unsupported", "network rules, egressProxy and maskRequestHost have no hutch equivalent")
		}
		switch {
		case len(n.AllowOut) > 0:
			return &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: n.AllowOut}, nil
		case len(n.DenyOut) > 0:
			return &api.NetworkPolicy{Egress: api.EgressNone}, nil
		}
	}
	if allowInternet != nil {
		if *allowInternet {
			return &api.NetworkPolicy{Egress: api.EgressPublic}, nil
		}
		return &api.NetworkPolicy{Egress: api.EgressNone}, nil
	}
	return nil, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	q := r.URL.Query()
	opts := sandbox.ListOptions{Cursor: q.Get("nextToken")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			h.writeError(w, r, errdefs.Invalid("invalid_limit", "limit must be a whole number"))
			return
		}
		opts.Limit = n
	}
	if m := q.Get("metadata"); m != "" {
		pairs, err := url.ParseQuery(m)
		if err != nil {
			h.writeError(w, r, errdefs.Invalid("invalid_metadata", "metadata must be key=value pairs joined by &: %v", err))
			return
		}
		opts.Labels = map[string]string{}
		for k, v := range pairs {
			opts.Labels[k] = v[0]
		}
	}
	states := []string{"running", "paused"}
	if r.URL.Path == Prefix+"/sandboxes" {
		states = []string{"running"} // the v1 list shows running sandboxes only
	}
	if s := q.Get("state"); s != "" {
		states = strings.Split(s, ",")
	}
	page, err := h.cfg.Sandboxes.List(r.Context(), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var after time.Time
	if a := q.Get("startedAfter"); a != "" {
		if after, err = time.Parse(time.RFC3339Nano, a); err != nil {
			h.writeError(w, r, errdefs.Invalid("invalid_started_after", "startedAfter must be an RFC 3339 time: %v", err))
			return
		}
	}
	template := q.Get("template")
	out := []listedSandbox{}
	for _, sb := range page.Sandboxes {
		switch {
		case !live(sb), !slices.Contains(states, stateOf(sb)):
		case template != "" && template != templateOf(sb):
		case sb.CreatedAt.Before(after):
		default:
			out = append(out, h.listed(sb))
		}
	}
	if page.NextCursor != "" {
		w.Header().Set("X-Next-Token", page.NextCursor)
	}
	writeJSON(w, http.StatusOK, out)
}

// withBody decodes the request's body into in and returns the caller's
// sandbox {id}, answering an error itself when either fails.
func (h *Handler) withBody(w http.ResponseWriter, r *http.Request, in any) (api.Sandbox, bool) {
	if err := h.decode(w, r, in); err != nil {
		h.writeError(w, r, err)
		return api.Sandbox{}, false
	}
	return h.sandbox(w, r)
}

// sandbox returns the caller's sandbox {id}, answering 404 itself for one
// that is gone.
func (h *Handler) sandbox(w http.ResponseWriter, r *http.Request) (api.Sandbox, bool) {
	sb, err := h.cfg.Sandboxes.Get(r.Context(), r.PathValue("id"))
	if err == nil && !live(sb) {
		err = errdefs.NotFound("sandbox_not_found", "sandbox %s is %s", sb.ID, sb.State)
	}
	if err != nil {
		h.writeError(w, r, err)
		return sb, false
	}
	return sb, true
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
	if sb, ok := h.sandbox(w, r); ok {
		writeJSON(w, http.StatusOK, h.detail(sb, p.KeyID))
	}
}

// kill destroys a sandbox; one already gone is 404, which the SDK reads
// as "false".
func (h *Handler) kill(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	sb, ok := h.sandbox(w, r)
	if !ok {
		return
	}
	if err := h.cfg.Sandboxes.Destroy(r.Context(), sb.ID); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// timeoutBody is E2B's body of timeout, connect and fork: seconds.
type timeoutBody struct {
	Timeout *int  `json:"timeout,omitempty"`
	Count   int   `json:"count,omitempty"`
	Memory  *bool `json:"memory,omitempty"`
}

func (h *Handler) setTimeout(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	var in timeoutBody
	if err := h.decode(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.Timeout == nil || *in.Timeout <= 0 {
		h.writeError(w, r, errdefs.Invalid("invalid_timeout", "timeout must be a positive number of seconds"))
		return
	}
	if _, err := h.cfg.Sandboxes.SetTimeout(r.Context(), r.PathValue("id"), api.TimeoutRequest{TimeoutS: *in.Timeout}); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pause pauses a running sandbox: 409 when it is not running, as E2B
// answers for one already paused. Without its memory (memory: false) it
// is stopped: its files kept, its processes ended.
func (h *Handler) pause(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	var in timeoutBody
	sb, ok := h.withBody(w, r, &in)
	if !ok {
		return
	}
	if sb.State != api.StateRunning {
		h.writeError(w, r, errdefs.Conflict("sandbox_not_running", "sandbox %s is %s", sb.ID, sb.State))
		return
	}
	pause := h.cfg.Sandboxes.Pause
	if in.Memory != nil && !*in.Memory {
		pause = h.cfg.Sandboxes.Stop
	}
	if _, err := pause(r.Context(), sb.ID); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connect brings a sandbox back to running (resuming a paused one,
// starting a stopped one), sets its timeout when the body has one, and
// answers 201 when it woke it, 200 when it was running.
func (h *Handler) connect(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
	var in timeoutBody
	sb, ok := h.withBody(w, r, &in)
	if !ok {
		return
	}
	status := http.StatusCreated
	var err error
	switch sb.State {
	case api.StatePaused:
		sb, err = h.cfg.Sandboxes.Resume(r.Context(), sb.ID)
	case api.StateStopped:
		sb, err = h.cfg.Sandboxes.Start(r.Context(), sb.ID)
	default:
		status = http.StatusOK
	}
	if err == nil && in.Timeout != nil && *in.Timeout > 0 {
		sb, err = h.cfg.Sandboxes.SetTimeout(r.Context(), sb.ID, api.TimeoutRequest{TimeoutS: *in.Timeout})
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, status, h.ref(sb, p.KeyID))
}

func (h *Handler) metrics(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	sb, ok := h.sandbox(w, r)
	if !ok {
		return
	}
	m, err := h.cfg.Sandboxes.Metrics(r.Context(), sb.ID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	cpus := cpuCount(sb)
	memTotal := m.Memory.LimitBytes
	out := make([]sandboxMetric, 0, len(m.History)+1)
	for _, s := range m.History {
		out = append(out, sandboxMetric{Timestamp: s.At, CPUCount: cpus, CPUUsedPct: s.CPUPercent,
			MemUsed: s.MemoryBytes, MemTotal: memTotal, DiskUsed: m.Disk.UsageBytes, DiskTotal: m.Disk.LimitBytes})
	}
	out = append(out, sandboxMetric{Timestamp: m.At, CPUCount: cpus, CPUUsedPct: m.CPU.Percent,
		MemUsed: m.Memory.UsageBytes, MemTotal: memTotal, DiskUsed: m.Disk.UsageBytes, DiskTotal: m.Disk.LimitBytes})
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) network(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	var in networkConfig
	if err := h.decode(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	pol, err := policyOf(nil, &in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if pol == nil { // every field cleared: the default, open egress
		pol = &api.NetworkPolicy{Egress: api.EgressPublic}
	}
	if _, err := h.cfg.Sandboxes.SetNetwork(r.Context(), r.PathValue("id"), *pol); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	var in struct {
		Name string `json:"name"`
	}
	if err := h.decode(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	snap, err := h.cfg.Sandboxes.Snapshot(r.Context(), r.PathValue("id"), api.CreateSnapshotRequest{Name: in.Name})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, snapshotOf(snap))
}

func snapshotOf(s api.Snapshot) snapshotInfo {
	info := snapshotInfo{SnapshotID: s.ID, Names: []string{}}
	if s.Name != "" {
		info.Names = append(info.Names, s.Name)
	}
	return info
}

func (h *Handler) snapshots(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	snaps, err := h.cfg.Sandboxes.ListSnapshots(r.Context(), r.URL.Query().Get("sandboxID"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	name := r.URL.Query().Get("name")
	out := []snapshotInfo{}
	for _, s := range snaps {
		if name == "" || s.Name == name {
			out = append(out, snapshotOf(s))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteSnapshot is E2B's DELETE /templates/{id}, which deletes a
// snapshot; hutch's templates are the operator's and are not deleted here.
func (h *Handler) deleteSnapshot(w http.ResponseWriter, r *http.Request, _ tenancy.Principal) {
	if err := h.cfg.Sandboxes.DeleteSnapshot(r.Context(), r.PathValue("id")); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) fork(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
	var in timeoutBody
	if err := h.decode(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.Count == 0 {
		in.Count = 1
	}
	res, err := h.cfg.Sandboxes.Fork(r.Context(), r.PathValue("id"), api.ForkRequest{Count: in.Count})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := make([]forkResult, 0, len(res.Sandboxes))
	for _, sb := range res.Sandboxes {
		if in.Timeout != nil && *in.Timeout > 0 {
			if _, err := h.cfg.Sandboxes.SetTimeout(r.Context(), sb.ID, api.TimeoutRequest{TimeoutS: *in.Timeout}); err != nil {
				// A fork that cannot have the lifetime asked for is not
				// left running with another one.
				if derr := h.cfg.Sandboxes.Destroy(context.WithoutCancel(r.Context()), sb.ID); derr != nil {
					h.cfg.Log.Warn("e2b: destroy a fork whose timeout failed", "sandbox", sb.ID, "err", derr)
				}
				status, code, msg := errdefs.HTTPStatus(err)
				out = append(out, forkResult{Error: &restError{Code: status, ErrorCode: code, Message: fmt.Sprintf("fork %s: %s", sb.ID, msg)}})
				continue
			}
		}
		ref := h.ref(sb, p.KeyID)
		out = append(out, forkResult{Sandbox: &ref})
	}
	writeJSON(w, http.StatusOK, out)
}
