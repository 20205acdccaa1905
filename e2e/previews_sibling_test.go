package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// siblingDomain is a custom preview domain: under it every preview shares
// one site, unlike under localhost.
const siblingDomain = "preview.test"

// TestPreviewSiblingCookie: in headless Chromium, on a custom preview
// domain, a page of one sandbox's preview (the attacker's, public) cannot
// use the visitor's cookie for another's private preview (the victim's):
// its fetch() does not read the victim's page although the victim's app
// allows any origin with credentials, its WebSocket does not open, and its
// iframe does not show the page. The victim's own pages still work on the
// cookie. Over plain HTTP Chromium sends no Fetch Metadata, so an address
// typed without a token is refused with a page that says why; over HTTPS
// (a proxy that ends TLS, --preview-url https://…) it opens.
func TestPreviewSiblingCookie(t *testing.T) {
	node, chromium := needBrowser(t)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			args := []string{"--driver", "namespace", "--preview-domain", siblingDomain}
			var front net.Listener // the TLS proxy's, for https
			if scheme == "https" {
				var err error
				if front, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--preview-url", "https://"+siblingDomain+":"+strconv.Itoa(front.Addr().(*net.TCPAddr).Port))
			}
			s, log := launch(t, nil, "", nil, args...)
			if strings.Contains(log.String(), "plain HTTP on a custom preview domain") != (scheme == "http") {
				t.Errorf("the start-up warning about plain HTTP, over %s:\n%s", scheme, log)
			}
			if front != nil {
				endTLS(t, front, s.url)
			}
			c := s.client()
			ctx := context.Background()
			p := newPreview(t, s)
			p.domain = siblingDomain
			var victim, attacker *api.Sandbox
			for _, sb := range []**api.Sandbox{&victim, &attacker} {
				var err error
				if *sb, err = c.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
					t.Fatal(err)
				}
				startApp(t, s, p, (*sb).ID)
			}
			signed, err := c.PreviewURL(ctx, victim.ID, appPort, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := c.SetPortPublic(ctx, attacker.ID, appPort, true)
			if err != nil {
				t.Fatal(err)
			}
			su, _ := url.Parse(signed.URL)
			victimOrigin := su.Scheme + "://" + su.Host
			attack := strings.TrimSuffix(pub.URL, "/") + "/attack?victim=" + url.QueryEscape(victimOrigin)
			if !strings.HasPrefix(victimOrigin, scheme+"://") || !strings.HasPrefix(attack, scheme+"://") {
				t.Fatalf("preview URLs %s and %s are not %s", signed.URL, attack, scheme)
			}

			got := runSibling(t, node, chromium, signed.URL, victimOrigin, attack)
			secret := "private content of " + strconv.Itoa(appPort) + "-" + victim.ID
			// The victim's own pages on the cookie.
			if got.Signed.Status != 200 || got.Signed.Echo != "echo: hello from the browser" || got.Signed.Count < 3 {
				t.Errorf("the victim's page from its signed URL: %+v", got.Signed)
			}
			if scheme == "https" && got.Signed.URL != victimOrigin+"/" {
				t.Errorf("over HTTPS the token stays in the address: %s", got.Signed.URL)
			}
			if got.Link.Status != 200 || !strings.Contains(got.Link.Text, secret) {
				t.Errorf("the victim page's link to /private: %d %q", got.Link.Status, got.Link.Text)
			}
			// Fetch Metadata: none over plain HTTP on a custom domain.
			wantSite := map[string]string{"http": "sec-fetch-site=", "https": "sec-fetch-site=same-origin"}[scheme]
			if !strings.Contains(got.Link.Text, wantSite+"\n") && !strings.HasSuffix(got.Link.Text, wantSite) {
				t.Errorf("the link's request: want %q in %q", wantSite, got.Link.Text)
			}
			// A typed address.
			switch {
			case scheme == "https" && (got.Typed.Status != 200 || !strings.Contains(got.Typed.Text, secret)):
				t.Errorf("a typed address over HTTPS: %d %q", got.Typed.Status, got.Typed.Text)
			case scheme == "http" && (got.Typed.Status != 403 || !strings.Contains(got.Typed.Text, "cannot use your preview sign-in") ||
				!strings.Contains(got.Typed.Text, "signed link") || strings.Contains(got.Typed.Text, secret)):
				t.Errorf("a typed address over plain HTTP: %d %q, want the refusal page", got.Typed.Status, got.Typed.Text)
			}
			// The attack.
			a := got.Attack
			if strings.Contains(a.Fetch, secret) || strings.Contains(a.Forged, secret) {
				t.Errorf("the sibling's fetch read the victim's private page: %q / with a forged Referer %q", a.Fetch, a.Forged)
			}
			if a.WS == "open" {
				t.Error("the sibling's WebSocket to the victim opened")
			}
			if a.FrameURL == "" || strings.Contains(a.Frame, secret) {
				t.Errorf("the sibling's iframe of %q shows %q", a.FrameURL, a.Frame)
			}
			t.Logf("the browser saw %+v", got)
		})
	}
}

// siblingRun is what sibling.mjs reports.
type siblingRun struct {
	Signed struct {
		Status int    `json:"status"`
		URL    string `json:"url"`
		Echo   string `json:"echo"`
		Count  int    `json:"count"`
	} `json:"signed"`
	Link, Typed struct {
		Status int    `json:"status"`
		Text   string `json:"text"`
	}
	Attack struct {
		Fetch    string `json:"fetch"`
		Forged   string `json:"forged"`
		WS       string `json:"ws"`
		FrameURL string `json:"frameURL"`
		Frame    string `json:"frame"`
	} `json:"attack"`
}

// runSibling runs browser/sibling.mjs with *.preview.test resolving to the
// loopback.
func runSibling(t *testing.T, node, chromium, signed, victim, attack string) siblingRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sibling.mjs", signed, victim, attack)
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "RESOLVE=MAP *."+siblingDomain+" 127.0.0.1", "INSECURE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sibling.mjs: %v\n%s", err, stderr.String())
	}
	var got siblingRun
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return got
}

// endTLS serves HTTPS on ln (a self-signed certificate) in front of the
// hutch at api, keeping each request's Host: a proxy that ends TLS.
func endTLS(t *testing.T, ln net.Listener, api string) {
	t.Helper()
	target, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewUnstartedServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
		pr.SetXForwarded()
	}})
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the browser's first look at a self-signed certificate
	front.Listener.Close()
	front.Listener = ln
	front.StartTLS()
	t.Cleanup(front.Close)
}
