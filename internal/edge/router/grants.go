package router

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/base/connlimit"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// An API key, once checked, lets preview requests in for grantTTL without
// being checked again: a key check is a SQLite read and a hash, dearer
// than the rest of a preview request. The check is one
// KeyAuthenticator.Begin whose context the router holds for as long as the
// grant serves requests or has requests in flight; so revoking the key
// through this server (auth.Authenticator.Revoke) ends that context, which
// drops the grant at once (the next request checks the key and is
// refused) and ends every request it let in, streams and WebSockets
// included. A key deleted by another server on the same store is seen
// within grantTTL, as the API itself sees it on its next request.
//
// A signed URL, a preview's cookie and an app's cookie name the key that
// minted them (token.go), and are granted the same way by that key's id
// (KeyAuthenticator.BeginKey: the key must still exist): revoking the key
// refuses them and ends what they let in, as for the key itself. One
// lookup of the key every grantTTL, however many browsers use them.
//
// What a grant caches is the key's principal only: every request is still
// checked against it (the sandbox's tenant, a read-only key's methods),
// and its credentials are still stripped (rewrite).
const (
	grantTTL  = 5 * time.Second
	maxGrants = 4096 // past it, a key is checked per request as before
)

// byKeyID prefixes the map's name of a grant by key id; an API key reads
// hk_…, so the two never meet.
const byKeyID = "id:"

// grant is one API key's check.
type grant struct {
	key     string // the map's name of it: the API key, or byKeyID and the key id
	p       tenancy.Principal
	ctx     context.Context // Begin's: ends when the key is revoked
	end     func()          // releases what Begin holds
	expires time.Time       // by Config.Now
	timer   *time.Timer     // retires the grant once grantTTL has passed

	// Under grants.mu:
	refs    int  // requests in flight that it let in
	retired bool // out of the map: lets no more requests in
	ended   bool // end was called
}

// grants are the API keys checked within grantTTL, by key. The zero value
// is ready.
type grants struct {
	mu sync.Mutex
	m  map[string]*grant
}

// admitKey lets in r, which carries API key key: from a live grant, or
// after Begin checks the key. It returns the grant, with the request
// counted in it; the caller calls rt.releaseGrant once the request is
// done.
func (rt *Router) admitKey(r *http.Request, key string) (*grant, error) {
	return rt.admit(r, key, func(ctx context.Context) (context.Context, func(), error) {
		return rt.cfg.Auth.Begin(ctx, "Bearer "+key)
	})
}

// admitKeyID lets in r, which carries a token minted by key id (a signed
// URL, a preview's or an app's cookie), as admitKey does: the key must
// still exist.
func (rt *Router) admitKeyID(r *http.Request, id string) (*grant, error) {
	return rt.admit(r, byKeyID+id, func(ctx context.Context) (context.Context, func(), error) {
		return rt.cfg.Auth.BeginKey(ctx, id)
	})
}

// admit lets r in by the grant named key, made with begin when there is
// none live, and marks r's connection authenticated
// (connlimit.Authenticated).
func (rt *Router) admit(r *http.Request, key string, begin func(context.Context) (context.Context, func(), error)) (*grant, error) {
	now := rt.cfg.Now()
	gs := &rt.grants
	gs.mu.Lock()
	if g := gs.m[key]; g != nil && !g.retired && now.Before(g.expires) && g.ctx.Err() == nil {
		g.refs++
		gs.mu.Unlock()
		connlimit.Authenticated(r.Context())
		return g, nil
	}
	gs.mu.Unlock()

	// Not from the request's context: the grant outlives the request.
	ctx, end, err := begin(context.Background())
	if err != nil {
		return nil, err
	}
	connlimit.Authenticated(r.Context())
	p, _ := tenancy.From(ctx)
	g := &grant{key: key, p: p, ctx: ctx, end: end, expires: now.Add(grantTTL), refs: 1}

	gs.mu.Lock()
	var ends []func()
	if old := gs.m[key]; old != nil {
		ends = append(ends, gs.retireLocked(old)...)
	}
	switch {
	case len(gs.m) >= maxGrants:
		g.retired = true // serves this request only
	default:
		if gs.m == nil {
			gs.m = map[string]*grant{}
		}
		gs.m[key] = g
		g.timer = time.AfterFunc(grantTTL, func() { gs.retire(g) })
		context.AfterFunc(ctx, func() { gs.retire(g) }) // revoked
	}
	gs.mu.Unlock()
	for _, f := range ends {
		f()
	}
	return g, nil
}

// serveAs lets ex's request r in as g's key: it returns r with a context
// that ends when the key is revoked, and sets ex.release to let go of it
// and of g once the request is done.
func (rt *Router) serveAs(r *http.Request, ex *exchange, g *grant) *http.Request {
	ctx, stop := grantContext(r, g)
	ex.keyID = g.p.KeyID
	ex.release = func() {
		stop()
		rt.releaseGrant(g)
	}
	return r.WithContext(ctx)
}

// grantContext is the context to serve a request g let in with: r's, and
// ended, with the revocation's cause, when g's key is revoked. stop
// releases it.
func grantContext(r *http.Request, g *grant) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	unhook := context.AfterFunc(g.ctx, func() { cancel(context.Cause(g.ctx)) })
	return ctx, func() {
		unhook()
		cancel(context.Canceled)
	}
}

// releaseGrant counts out a request g let in.
func (rt *Router) releaseGrant(g *grant) {
	gs := &rt.grants
	gs.mu.Lock()
	g.refs--
	end := gs.endLocked(g)
	gs.mu.Unlock()
	if end != nil {
		end()
	}
}

// retire takes g out of the map; it ends once its last request is done.
func (gs *grants) retire(g *grant) {
	gs.mu.Lock()
	ends := gs.retireLocked(g)
	gs.mu.Unlock()
	for _, f := range ends {
		f()
	}
}

func (gs *grants) retireLocked(g *grant) []func() {
	if gs.m[g.key] == g {
		delete(gs.m, g.key)
	}
	g.retired = true
	if g.timer != nil {
		g.timer.Stop()
	}
	if end := gs.endLocked(g); end != nil {
		return []func(){end}
	}
	return nil
}

// endLocked returns g's end when g is retired, idle and not yet ended.
func (gs *grants) endLocked(g *grant) func() {
	if !g.retired || g.refs > 0 || g.ended {
		return nil
	}
	g.ended = true
	return g.end
}

// closeAll retires every grant (Router.Close).
func (gs *grants) closeAll() {
	gs.mu.Lock()
	var ends []func()
	for _, g := range gs.m {
		ends = append(ends, gs.retireLocked(g)...)
	}
	gs.mu.Unlock()
	for _, f := range ends {
		f()
	}
}
