package files_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

func readHost(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHistoryRoundTrip: checkpoint, list, diff, restore and the undo of
// the restore, through the client.
func TestHistoryRoundTrip(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	app := filepath.Join(f.Work, "app")
	agenttest.WriteHost(t, filepath.Join(app, "index.js"), "v1")
	agenttest.WriteHost(t, filepath.Join(app, "lib/util.js"), "util")
	agenttest.WriteHost(t, filepath.Join(app, "node_modules/dep/index.js"), "dep")

	cp, err := checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: app, Message: "before task 1", Kind: agentproto.CheckpointTask})
	if err != nil {
		t.Fatal(err)
	}
	if cp.ID == "" || cp.Kind != agentproto.CheckpointTask || cp.Message != "before task 1" || cp.Files != 2 || cp.Bytes != 6 {
		t.Errorf("checkpoint %+v", cp)
	}

	agenttest.WriteHost(t, filepath.Join(app, "index.js"), "v2")
	agenttest.WriteHost(t, filepath.Join(app, "new.js"), "new")
	if err := os.RemoveAll(filepath.Join(app, "lib")); err != nil {
		t.Fatal(err)
	}
	changes, err := diff(ctx, f, app, cp.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []agentproto.Change{
		{Path: "index.js", Change: agentproto.ChangeModified, Type: "file"},
		{Path: "lib", Change: agentproto.ChangeDeleted, Type: "dir"},
		{Path: "lib/util.js", Change: agentproto.ChangeDeleted, Type: "file"},
		{Path: "new.js", Change: agentproto.ChangeAdded, Type: "file"},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("diff %v, want %v", changes, want)
	}

	res, err := restore(ctx, f, agentproto.RestoreRequest{Dir: app, Steps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Restored.ID != cp.ID || res.PreUndo.Kind != agentproto.CheckpointPreUndo || len(res.Changes) != 4 {
		t.Errorf("restore %+v", res)
	}
	if got := readHost(t, filepath.Join(app, "index.js")); got != "v1" {
		t.Errorf("index.js = %q", got)
	}
	if got := readHost(t, filepath.Join(app, "lib/util.js")); got != "util" {
		t.Errorf("lib/util.js = %q", got)
	}
	if _, err := os.Stat(filepath.Join(app, "new.js")); !os.IsNotExist(err) {
		t.Errorf("new.js after restore: %v", err)
	}

	list, err := checkpoints(ctx, f, app)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != res.PreUndo.ID || list[1].ID != cp.ID {
		t.Errorf("checkpoints %+v", list)
	}
	// Between two checkpoints, and the undo of the undo.
	changes, err = diff(ctx, f, app, cp.ID, res.PreUndo.ID)
	if err != nil || len(changes) != 4 {
		t.Errorf("diff between checkpoints: %v, %v", changes, err)
	}
	if _, err := restore(ctx, f, agentproto.RestoreRequest{Dir: app, ID: res.PreUndo.ID}); err != nil {
		t.Fatal(err)
	}
	if got := readHost(t, filepath.Join(app, "new.js")); got != "new" {
		t.Errorf("new.js after the undo of the undo = %q", got)
	}
}

// TestHistoryStore: the stores live below the root, 0700, named by the
// directory; a directory never checkpointed has no store and no list.
func TestHistoryStore(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	list, err := checkpoints(ctx, f, f.Work)
	if err != nil || len(list) != 0 {
		t.Errorf("checkpoints of an untracked directory: %v, %v", list, err)
	}
	base := filepath.Join(f.Root, ".hutch-history")
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("a list made the store: %v", err)
	}
	agenttest.WriteHost(t, filepath.Join(f.Work, "a"), "a")
	// The root itself holds the stores: they are skipped.
	cp, err := checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: f.Root})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Kind != agentproto.CheckpointManual {
		t.Errorf("default kind %q", cp.Kind)
	}
	des, err := os.ReadDir(base)
	if err != nil || len(des) != 1 {
		t.Fatalf("stores: %v, %v", des, err)
	}
	if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("stores' directory mode: %v, %v", fi.Mode(), err)
	}
	fi, err := os.Stat(filepath.Join(base, des[0].Name()))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store mode: %v, %v", fi.Mode(), err)
	}
	changes, err := diff(ctx, f, f.Root, cp.ID, "")
	if err != nil || len(changes) != 0 {
		t.Errorf("the stores show in a diff of the root: %v, %v", changes, err)
	}
	if _, err := checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: filepath.Join(base, des[0].Name())}); !errdefs.HasCode(err, "invalid_parameter") {
		t.Errorf("checkpoint of a store: %v", err)
	}
}

// TestHistoryConfiguredDir: Config.HistoryDir moves the stores.
func TestHistoryConfiguredDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stores")
	f := agenttest.New(t, func(c *agent.Config) { c.HistoryDir = dir })
	if _, err := checkpoint(context.Background(), f, agentproto.CheckpointRequest{Dir: f.Work}); err != nil {
		t.Fatal(err)
	}
	if des, err := os.ReadDir(dir); err != nil || len(des) != 1 {
		t.Errorf("stores in %s: %v, %v", dir, des, err)
	}
}

// TestHistoryRestoreRemovedDir: a tracked directory removed whole comes
// back.
func TestHistoryRestoreRemovedDir(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	app := filepath.Join(f.Work, "app")
	agenttest.WriteHost(t, filepath.Join(app, "deep/file"), "content")
	cp, err := checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: app, Kind: agentproto.CheckpointTask})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(app); err != nil {
		t.Fatal(err)
	}
	if _, err := restore(ctx, f, agentproto.RestoreRequest{Dir: app, ID: cp.ID}); err != nil {
		t.Fatal(err)
	}
	if got := readHost(t, filepath.Join(app, "deep/file")); got != "content" {
		t.Errorf("deep/file = %q", got)
	}
}

func TestHistoryErrors(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	app := filepath.Join(f.Work, "app")
	agenttest.WriteHost(t, filepath.Join(app, "a"), "a")

	_, err := restore(ctx, f, agentproto.RestoreRequest{Dir: app, Steps: 1})
	agenttest.WantErr(t, "restore of an untracked directory", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = diff(ctx, f, app, "00000001", "")
	agenttest.WantErr(t, "diff of an untracked directory", err, errdefs.ErrNotFound, "checkpoint_not_found")

	if _, err := checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: app}); err != nil {
		t.Fatal(err)
	}
	_, err = restore(ctx, f, agentproto.RestoreRequest{Dir: app, ID: "00000042"})
	agenttest.WantErr(t, "restore of an unknown checkpoint", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = restore(ctx, f, agentproto.RestoreRequest{Dir: app, Steps: 2})
	agenttest.WantErr(t, "restore past the oldest", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = restore(ctx, f, agentproto.RestoreRequest{Dir: app})
	agenttest.WantErr(t, "restore of nothing", err, errdefs.ErrInvalid, "invalid_parameter")
	_, err = diff(ctx, f, app, "", "")
	agenttest.WantErr(t, "diff from nothing", err, errdefs.ErrInvalid, "invalid_parameter")
	_, err = diff(ctx, f, app, "00000001", "00000042")
	agenttest.WantErr(t, "diff to an unknown checkpoint", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: "app"})
	agenttest.WantErr(t, "relative dir", err, errdefs.ErrInvalid, "invalid_parameter")
	_, err = checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: "/outside/the/root"})
	agenttest.WantErr(t, "dir outside the root", err, errdefs.ErrInvalid, "path_outside_sandbox")
	_, err = checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: filepath.Join(f.Work, "missing")})
	agenttest.WantErr(t, "missing dir", err, errdefs.ErrNotFound, "file_not_found")
	_, err = checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: filepath.Join(app, "a")})
	agenttest.WantErr(t, "a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = checkpoint(ctx, f, agentproto.CheckpointRequest{Dir: app, Kind: "Bad Kind"})
	agenttest.WantErr(t, "bad kind", err, errdefs.ErrInvalid, "invalid_parameter")
}

// TestHistoryAgentTooOld: a client of an agent without the feature does
// not ask it.
func TestHistoryAgentTooOld(t *testing.T) {
	f := agenttest.New(t, nil)
	info := agentproto.Current()
	info.Features = slices.DeleteFunc(info.Features, func(s string) bool { return s == agentproto.FeatureHistory })
	c := agentclient.New("unix", f.Sock, agenttest.Token, agentclient.Speaking(info))
	defer c.Close()
	_, err := c.Checkpoint(context.Background(), f.Work, "", "")
	agenttest.WantErr(t, "checkpoint", err, errdefs.ErrUnsupported, "agent_too_old")
	_, err = c.Checkpoints(context.Background(), f.Work)
	agenttest.WantErr(t, "list", err, errdefs.ErrUnsupported, "agent_too_old")
}

// The history's calls of the wire protocol, whose answers the tests read
// whole (the client's typed methods convert them for the control plane).

func checkpoint(ctx context.Context, f *agenttest.Fixture, req agentproto.CheckpointRequest) (agentproto.Checkpoint, error) {
	var cp agentproto.Checkpoint
	err := f.Client.Call(ctx, http.MethodPost, "/history/checkpoints", nil, req, &cp)
	return cp, err
}

func checkpoints(ctx context.Context, f *agenttest.Fixture, dir string) ([]agentproto.Checkpoint, error) {
	var list agentproto.CheckpointList
	err := f.Client.Call(ctx, http.MethodGet, "/history/checkpoints", url.Values{"dir": {dir}}, nil, &list)
	return list.Checkpoints, err
}

func restore(ctx context.Context, f *agenttest.Fixture, req agentproto.RestoreRequest) (agentproto.RestoreResult, error) {
	var res agentproto.RestoreResult
	err := f.Client.Call(ctx, http.MethodPost, "/history/restore", nil, req, &res)
	return res, err
}

func diff(ctx context.Context, f *agenttest.Fixture, dir, from, to string) ([]agentproto.Change, error) {
	q := url.Values{"dir": {dir}, "from": {from}}
	if to != "" {
		q.Set("to", to)
	}
	var list agentproto.ChangeList
	err := f.Client.Call(ctx, http.MethodGet, "/history/diff", q, nil, &list)
	return list.Changes, err
}
