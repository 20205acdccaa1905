package proc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// TestStdinStream: input written to an open stream reaches the process
// while the stream stays open, and closing the stream leaves the
// process's input open.
func TestStdinStream(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.Client.StdinStream(ctx, p.PID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Client.ProcessOutput(ctx, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var got strings.Builder
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := in.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		for !strings.HasSuffix(got.String(), line) {
			ev, err := out.Next()
			if err != nil {
				t.Fatalf("output so far %q: %v", got.String(), err)
			}
			got.Write(ev.Data)
		}
	}
	end, err := in.Close(ctx)
	if err != nil || !end.Running || !end.StdinOpen {
		t.Fatalf("after the stream: %+v, %v; want the process running with its input open", end, err)
	}
	if _, err := f.Client.WriteStdin(ctx, p.PID, strings.NewReader("three\n"), true); err != nil {
		t.Fatal(err)
	}
	if done, err := f.Client.WaitProcess(ctx, p.PID, 5*time.Second); err != nil || done.Running {
		t.Fatalf("cat after its input closed: %+v, %v", done, err)
	}
}
