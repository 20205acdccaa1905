package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// page is one answer the router gives instead of the sandbox's program:
// an HTML page for browsers, the API's error shape for everyone else.
type page struct {
	status int
	code   string
	title  string
	// message is a format taking the port and the sandbox id, in that
	// order (%[1]d, %[2]s).
	message string
	// retry: Retry-After, and the HTML page reloads itself a bounded
	// number of times.
	retry bool
}

var (
	pagePrivate = page{http.StatusUnauthorized, "preview_private", "This preview is private",
		"Port %[1]d of sandbox %[2]s is private. Open it with a signed link (POST /v1/sandboxes/%[2]s/ports/%[1]d/url), " +
			"send an API key of the sandbox's tenant, or make the port public (PUT /v1/sandboxes/%[2]s/ports/%[1]d).", false}
	pageCookieRefused = page{http.StatusForbidden, "preview_cookie_refused", "This request cannot use your preview sign-in",
		"Port %[1]d of sandbox %[2]s is private. Your browser holds its sign-in cookie, but the cookie only counts on requests " +
			"this preview's own pages make and on pages opened in their own tab; this one came from a page of another preview or site " +
			"(a frame, a script, an embed), or the browser did not say where it came from, as browsers do not over plain HTTP on a custom domain. " +
			"Open the preview in its own tab with a new signed link (POST /v1/sandboxes/%[2]s/ports/%[1]d/url), or send an API key " +
			"of the sandbox's tenant. Operators: serve previews over HTTPS (--preview-url https://…), where browsers say where requests come from.", false}
	pageReaderRefused = page{http.StatusForbidden, "member_required", "A read-only key only views this preview",
		"Port %[1]d of sandbox %[2]s is private, and the API key sent is read-only: it may GET and HEAD pages, not send anything else or open a WebSocket. " +
			"Use a member's key, or a signed link.", false}
	pageBadKey = page{http.StatusUnauthorized, "invalid_api_key", "The API key is not valid",
		"The API key sent with this request is not valid.", false}
	pageBadToken = page{http.StatusUnauthorized, "invalid_preview_token", "This link has expired",
		"This preview link has expired or is not valid. Ask for a new one (POST /v1/sandboxes/%[2]s/ports/%[1]d/url).", false}
	pageNotFound = page{http.StatusNotFound, "preview_not_found", "No such preview",
		"There is no sandbox %[2]s to preview.", false}
	pageFailed = page{http.StatusNotFound, "sandbox_failed", "The sandbox has failed",
		"Sandbox %[2]s has failed; it serves nothing.", false}
	pageNotRunning = page{http.StatusServiceUnavailable, "sandbox_not_running", "The sandbox is not running",
		"Sandbox %[2]s is not running. Start it (POST /v1/sandboxes/%[2]s/start) and this preview comes back.", true}
	pagePortClosed = page{http.StatusBadGateway, "port_closed", "Nothing listens on this port",
		"Nothing listens on port %[1]d in sandbox %[2]s. Start a server there (on localhost, 127.0.0.1 or 0.0.0.0), then reload.", false}
	pageUnsupported = page{http.StatusNotImplemented, "previews_unsupported", "Previews are not available",
		"Sandbox %[2]s has no network of its own (its driver runs it on the host's), so its ports cannot be previewed.", false}
	pageBusy = page{http.StatusServiceUnavailable, "too_many_tunnels", "Too many connections",
		"Sandbox %[2]s has too many preview connections open. Try again shortly.", true}
	pageAgentDown = page{http.StatusBadGateway, "agent_unreachable", "The sandbox does not answer",
		"The agent of sandbox %[2]s did not answer.", false}
	pageBadGateway = page{http.StatusBadGateway, "bad_gateway", "No answer from the sandbox",
		"The program on port %[1]d of sandbox %[2]s closed the connection without an answer.", false}
	pageInternal = page{http.StatusInternalServerError, "internal", "Internal error",
		"The preview failed on the server's side.", false}
)

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if .Reload}}<meta http-equiv="refresh" content="{{.After}};url={{.Reload}}">
{{end}}<title>{{.Title}} · hutch</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}
code{background:#f3f3f3;padding:0 .2em}.muted{color:#666}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
{{if .Reload}}<p class="muted" id="retry">Trying again in {{.After}} s (attempt {{.Attempt}} of {{.Max}}).</p>
{{else if .GaveUp}}<p class="muted" id="retry">Gave up after {{.Max}} attempts. <a href="{{.Again}}">Try again</a>.</p>
{{end}}<p class="muted"><code>{{.Code}}</code> · {{.Status}}</p>
</body>
</html>
`))

// fail answers the request with p and records reason for the log.
func (rt *Router) fail(w http.ResponseWriter, r *http.Request, ex *exchange, p page, reason string) {
	ex.reason = reason
	t := ex.target
	msg := p.message
	if strings.Contains(msg, "%[") {
		msg = fmt.Sprintf(msg, t.Port, t.SandboxID)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if p.retry {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if p.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="hutch preview"`)
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(p.status)
		json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: p.code, Message: msg}})
		return
	}
	data := struct {
		Title, Message, Code, Status string
		Reload, Again                string
		After, Attempt, Max          int
		GaveUp                       bool
	}{Title: p.title, Message: msg, Code: p.code, Status: strconv.Itoa(p.status) + " " + http.StatusText(p.status),
		After: retryAfter, Max: rt.cfg.MaxRetries}
	if p.retry {
		n, _ := strconv.Atoi(r.URL.Query().Get(RetryParam))
		n = max(0, min(n, rt.cfg.MaxRetries))
		if n < rt.cfg.MaxRetries {
			data.Reload, data.Attempt = rt.selfURL(r, n+1), n+1
		} else {
			data.GaveUp, data.Again = true, rt.selfURL(r, 0)
		}
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(p.status)
	pageTemplate.Execute(w, data)
}

// selfURL is the request's own URL, absolute on the preview's origin (so a
// path like "//elsewhere" stays here), without a token and with the retry
// count set (none when zero).
func (rt *Router) selfURL(r *http.Request, retry int) string {
	q := stripQuery(r.URL.RawQuery, TokenParam, RetryParam)
	if retry > 0 {
		if q != "" {
			q += "&"
		}
		q += RetryParam + "=" + strconv.Itoa(retry)
	}
	u := url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q}
	return rt.origin(r) + u.RequestURI()
}

// portClosed is pagePortClosed with what the agent said it tried ("nothing
// listens on port 5173 in the sandbox (tried 127.0.0.1:5173 and
// [::1]:5173)"), when it said it.
func portClosed(err error) page {
	p := pagePortClosed
	var e *errdefs.Error
	if errors.As(err, &e) && strings.Contains(e.Message, "(tried ") {
		msg := strings.ToUpper(e.Message[:1]) + e.Message[1:]
		p.message = strings.ReplaceAll(msg, "%", "%%") + ". Start a server there (on localhost, 127.0.0.1 or 0.0.0.0), then reload."
	}
	return p
}
