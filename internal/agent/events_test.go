package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// TestEventFeed: the feed pushes each process's exit once, numbered; a
// client that reconnects after an event gets only what came later, and
// one that starts from 0 gets what the agent retained.
func TestEventFeed(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	feed, err := f.Client.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	next := func(feed *agentclient.Feed) agentclient.Event {
		t.Helper()
		ev, err := feed.Next()
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if ev := next(feed); !ev.Hello || ev.Seq != 0 {
		t.Fatalf("first event %+v, want hello 0", ev)
	}
	var pids []int
	for _, code := range []string{"3", "4"} {
		p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"sh", "-c", "exit " + code}})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p.PID)
		ev := next(feed)
		if ev.Exited == nil || ev.Exited.PID != p.PID || *ev.Exited.ExitCode != int(code[0]-'0') || ev.Seq != uint64(len(pids)) {
			t.Fatalf("event %+v (process %+v), want the exit of %d with %s as event %d", ev, ev.Exited, p.PID, code, len(pids))
		}
	}
	again, err := f.Client.Events(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if ev := next(again); !ev.Hello || ev.Seq != 2 {
		t.Fatalf("hello %+v, want 2", ev)
	}
	if ev := next(again); ev.Seq != 2 || ev.Exited == nil || ev.Exited.PID != pids[1] {
		t.Fatalf("after 1: %+v, want only the second exit", ev)
	}
	old := agentclient.New("unix", f.Sock, agenttest.Token, agentclient.Speaking(agentproto.Info{}))
	defer old.Close()
	_, err = old.Events(ctx, 0)
	agenttest.WantErr(t, "Events of a protocol 1 agent", err, errdefs.ErrUnsupported, "agent_too_old")
}
