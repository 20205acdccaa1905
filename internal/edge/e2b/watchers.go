package e2b

import (
	"context"
	"errors"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	hsandbox "github.com/hutchdev/hutch/internal/control/sandbox"
	pb "github.com/hutchdev/hutch/internal/edge/e2b/envdpb/filesystem"
)

// Bounds of the polled watchers (envd's CreateWatcher, GetWatcherEvents,
// RemoveWatcher: the Python SDK's synchronous watch_dir).
const (
	// watcherIdle ends a watcher nobody has polled for this long.
	watcherIdle = time.Minute
	// watcherBuffer is how many events a watcher keeps between polls;
	// beyond it the oldest go.
	watcherBuffer = 4096
	// maxWatchers is how many watchers one key may hold at once.
	maxWatchers = 64
)

// watchers are the polled watchers, each an owned goroutine that reads a
// hutch watch stream into a bounded buffer until it is removed, goes
// unpolled for watcherIdle, its stream ends, or the handler closes.
type watchers struct {
	mu     sync.Mutex
	byID   map[string]*watcher
	wg     sync.WaitGroup
	closed bool
}

type watcher struct {
	sandbox, keyID string
	cancel         context.CancelFunc

	mu       sync.Mutex
	events   []*pb.FilesystemEvent
	lost     bool // the buffer overflowed since the last poll
	lastPoll time.Time
}

// add starts a watcher of st, which runs until ctx ends, for keyID,
// unless the key holds too many; it returns the watcher's id. cancel ends
// ctx.
func (ws *watchers) add(ctx context.Context, cancel context.CancelFunc, keyID, sandbox string, st hsandbox.Stream[api.WatchEvent]) (string, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	held := 0
	for _, w := range ws.byID {
		if w.keyID == keyID {
			held++
		}
	}
	if ws.closed || held >= maxWatchers {
		return "", connect.NewError(connect.CodeResourceExhausted, errors.New("too many watchers: remove one first (RemoveWatcher)"))
	}
	if ws.byID == nil {
		ws.byID = map[string]*watcher{}
	}
	id := ids.New()
	w := &watcher{sandbox: sandbox, keyID: keyID, cancel: cancel, lastPoll: time.Now()}
	ws.byID[id] = w
	ws.wg.Go(func() {
		defer ws.remove(id)
		w.run(ctx, st)
	})
	return id, nil
}

// run reads st into the buffer until ctx ends or the stream does, and
// ends the watcher when nobody polls it.
func (w *watcher) run(ctx context.Context, st hsandbox.Stream[api.WatchEvent]) {
	p := hsandbox.StartPump(ctx, st, 0)
	defer p.Stop()
	idle := time.NewTicker(watcherIdle / 4)
	defer idle.Stop()
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				return
			}
			w.mu.Lock()
			w.events = append(w.events, watchEvents(ev)...)
			if over := len(w.events) - watcherBuffer; over > 0 {
				w.events, w.lost = w.events[over:], true
			}
			w.mu.Unlock()
		case <-idle.C:
			w.mu.Lock()
			stale := time.Since(w.lastPoll) > watcherIdle
			w.mu.Unlock()
			if stale {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// take returns and clears what w gathered since the last poll.
func (w *watcher) take() ([]*pb.FilesystemEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastPoll = time.Now()
	out, lost := w.events, w.lost
	w.events, w.lost = nil, false
	return out, lost
}

// get returns the caller's watcher id of sandbox; another key's or
// another sandbox's is not found, as one that has ended.
func (ws *watchers) get(id, keyID, sandbox string) (*watcher, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w, ok := ws.byID[id]
	if !ok || w.keyID != keyID || w.sandbox != sandbox {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no watcher "+id+" (a watcher ends when removed, after a minute unpolled, or with its sandbox)"))
	}
	return w, nil
}

func (ws *watchers) remove(id string) {
	ws.mu.Lock()
	w, ok := ws.byID[id]
	delete(ws.byID, id)
	ws.mu.Unlock()
	if ok {
		w.cancel()
	}
}

// close ends every watcher and waits for their goroutines.
func (ws *watchers) close() {
	ws.mu.Lock()
	ws.closed = true
	for _, w := range ws.byID {
		w.cancel()
	}
	ws.mu.Unlock()
	ws.wg.Wait()
}

func (s filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[pb.CreateWatcherRequest]) (*connect.Response[pb.CreateWatcherResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	if req.Msg.GetIncludeEntry() {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("includeEntry is not translated yet"))
	}
	p, _ := tenancy.From(ctx)
	// The watch outlives this call: it runs on the handler's own context,
	// as the caller's key, until the watcher ends or the key is revoked.
	kctx, end, err := s.h.cfg.Auth.BeginKey(s.h.base, p.KeyID)
	if err != nil {
		return nil, s.h.rpcError(err)
	}
	wctx, stop := context.WithCancel(kctx)
	cancel := func() {
		stop()
		end()
	}
	st, err := s.h.cfg.Sandboxes.Watch(wctx, c.sandbox, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		cancel()
		return nil, s.h.rpcError(err)
	}
	id, err := s.h.watchers.add(wctx, cancel, p.KeyID, c.sandbox, st)
	if err != nil {
		st.Close()
		cancel()
		return nil, err
	}
	return connect.NewResponse(&pb.CreateWatcherResponse{WatcherId: id}), nil
}

// GetWatcherEvents returns the events since the last poll. A watcher that
// lost events (its buffer overflowed) says so as an error once its events
// are taken, so the client rescans; one whose stream ended is gone (not
// found).
func (s filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[pb.GetWatcherEventsRequest]) (*connect.Response[pb.GetWatcherEventsResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	p, _ := tenancy.From(ctx)
	w, err := s.h.watchers.get(req.Msg.GetWatcherId(), p.KeyID, c.sandbox)
	if err != nil {
		return nil, err
	}
	events, lost := w.take()
	if lost {
		return nil, connect.NewError(connect.CodeDataLoss, errors.New("events were lost between polls; list the directory again"))
	}
	return connect.NewResponse(&pb.GetWatcherEventsResponse{Events: events}), nil
}

func (s filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[pb.RemoveWatcherRequest]) (*connect.Response[pb.RemoveWatcherResponse], error) {
	c, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	p, _ := tenancy.From(ctx)
	if _, err := s.h.watchers.get(req.Msg.GetWatcherId(), p.KeyID, c.sandbox); err != nil {
		return nil, err
	}
	s.h.watchers.remove(req.Msg.GetWatcherId())
	return connect.NewResponse(&pb.RemoveWatcherResponse{}), nil
}
