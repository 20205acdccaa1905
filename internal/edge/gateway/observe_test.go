package gateway

import (
	"testing"

	"github.com/hutchdev/hutch/api"
)

// observer passes on what it is told.
type observer chan observed

type observed struct {
	provider string
	status   int
}

func (o observer) ObserveGatewayCall(provider string, status int) { o <- observed{provider, status} }

// TestObserver: every call answered is observed once, refused ones
// included, and a provider this server does not have is never named.
func TestObserver(t *testing.T) {
	e := newEnv(t, echo, oneProvider)
	obs := make(observer, 1)
	cfg := e.gw.cfg
	cfg.Observer = obs
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	e.gw = gw
	tok := e.gw.Env(e.sandbox)[api.EnvProviderToken]
	srv := e.channel(e.sandbox)
	for _, tc := range []struct {
		path, token string
		want        observed
	}{
		{"/provider/v1/up/chat", tok, observed{"up", 200}},
		{"/provider/v1/made-up-name/chat", tok, observed{"", 404}},
		{"/provider/v1/up/chat", "not-a-token", observed{"", 401}},
	} {
		resp, body := send(t, srv, "POST", tc.path, "{}", bearer(tc.token))
		if resp.StatusCode != tc.want.status {
			t.Fatalf("POST %s: %d %s; want %d", tc.path, resp.StatusCode, body, tc.want.status)
		}
		if got := <-obs; got != tc.want {
			t.Errorf("POST %s observed %+v; want %+v", tc.path, got, tc.want)
		}
	}
	select {
	case o := <-obs:
		t.Errorf("observed %+v more than the three calls", o)
	default:
	}
}
