package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

// dataSize is what a measured sandbox holds in /workspace: files of random
// bytes, written inside it before the timings.
type dataSize struct {
	label string
	files int
	each  int64 // bytes a file
}

var dataSizes = []dataSize{
	{"10 MiB", 1, 10 << 20},
	{"1 GiB", 16, 64 << 20},
}

// sizeResult is what forks and snapshots of one sandbox cost.
type sizeResult struct {
	size dataSize
	// workspaceKiB is what /workspace held (du -sk in the sandbox).
	workspaceKiB int64
	// snapBytes and snapFiles are what the snapshots say they hold
	// (nothing on btrfs, whose snapshots do not walk the tree).
	snapBytes, snapFiles int64
	method               string // how the server copied it, from its log

	create                       []time.Duration // floor: a create from host, nothing copied
	cp                           []time.Duration // floor: cp -a --reflink=auto of the same files, synced
	fork, forkPause, forkCapture []time.Duration
	snap, snapPause, snapCapture []time.Duration
	fromSnap                     []time.Duration // create from the snapshot
}

// fsResult is what one kind of filesystem measured.
type fsResult struct {
	typ     string
	storage api.StorageInfo
	sizes   []sizeResult
}

// measureFS times forks and snapshots of a sandbox of each dataSize on a
// filesystem of typ: each size on a fresh filesystem and server, so
// neither inherits what the other left (on btrfs, the cleaner still
// dropping the subvolumes of the other's forks).
func measureFS(ctx context.Context, o options, img *image, typ string, log *serverLog) (fsResult, error) {
	r := fsResult{typ: typ}
	for _, size := range dataSizes {
		sr, st, err := measureFresh(ctx, o, img, typ, size, log)
		if err != nil {
			return r, fmt.Errorf("%s: %w", size.label, err)
		}
		r.storage = st
		r.sizes = append(r.sizes, sr)
	}
	return r, nil
}

// measureFresh makes a filesystem of typ on img, starts a server whose data
// directory is on it, times creates from host there (the floor: nothing
// copied), and then forks and snapshots of a sandbox holding size.
// Whatever it made is gone when it returns.
func measureFresh(ctx context.Context, o options, img *image, typ string, size dataSize, log *serverLog) (sr sizeResult, st api.StorageInfo, retErr error) {
	progress("%s, %s: making the filesystem and its server", typ, size.label)
	fs, err := img.mount(typ)
	if err != nil {
		return sr, st, err
	}
	defer func() { retErr = errors.Join(retErr, fs.unmount()) }()
	bs, err := benchserver.StartIn(ctx, fs.dir, log.logger(), func(cfg *config.Config) {
		cfg.AgentPath = o.agent
		cfg.Driver = "namespace"
		cfg.WarmPool = o.warm
	})
	if err != nil {
		return sr, st, err
	}
	defer bs.Stop(ctx)
	c := bs.Client
	own := newOwned(c)
	defer func() { retErr = errors.Join(retErr, own.cleanup(ctx)) }()

	info, err := c.Info(ctx)
	if err != nil {
		return sr, st, err
	}
	if info.Storage == nil {
		return sr, st, errors.New("the server found no storage backend on the filesystem (its probe failed)")
	}
	st = *info.Storage
	if !info.Features["snapshots"] {
		return sr, st, fmt.Errorf("the %s driver cannot snapshot here (storage %+v)", info.Driver, st)
	}
	progress("%s, %s: %d creates from host (the floor: nothing copied)", typ, size.label, o.n)
	create, err := timeCreates(ctx, own, o.n, api.CreateSandboxRequest{Root: true})
	if err != nil {
		return sr, st, err
	}
	progress("%s, %s: %d copies with cp (the floor of a copy)", typ, size.label, cpRuns)
	cp, err := timeCp(ctx, fs, size)
	if err != nil {
		return sr, st, err
	}
	sr, err = measureSize(ctx, o, own, fs, size, log)
	sr.create, sr.cp = create, cp
	return sr, st, err
}

// cpRuns is how many copies the cp floor times.
const cpRuns = 5

// timeCp writes files of random bytes as the sandbox will hold them into
// a directory of fs, then times cpRuns copies of it with `cp -a
// --reflink=auto` (a reflink where the filesystem has them, else the bytes,
// which cp copies with copy_file_range) followed by a syncfs, as hutch's
// copies are synced; each copy is removed after (untimed), and the
// directory at the end.
func timeCp(ctx context.Context, fs *loopFS, size dataSize) (_ []time.Duration, retErr error) {
	dir := filepath.Join(fs.dir, "cp-floor")
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return nil, err
	}
	defer func() { retErr = errors.Join(retErr, os.RemoveAll(dir)) }()
	for i := range size.files {
		f, err := os.Create(filepath.Join(src, fmt.Sprint("data", i)))
		if err != nil {
			return nil, err
		}
		_, err = io.CopyN(f, rand.Reader, size.each)
		if err = errors.Join(err, f.Close()); err != nil {
			return nil, err
		}
	}
	if err := syncfs(fs.dir); err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range cpRuns {
		dst := filepath.Join(dir, fmt.Sprint("copy", i))
		start := time.Now()
		_, err := runTool(ctx, nil, "cp", "-a", "--reflink=auto", src, dst)
		if err == nil {
			err = syncfs(fs.dir)
		}
		d := time.Since(start)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		if err := os.RemoveAll(dst); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// measureSize makes a sandbox holding size of random bytes, then times
// o.n forks of it and o.n snapshots of it each followed by a create from
// the snapshot, each after one untimed warm-up; -only may leave out
// either.
func measureSize(ctx context.Context, o options, own *owned, fs *loopFS, size dataSize, log *serverLog) (sr sizeResult, retErr error) {
	sr.size = size
	c := own.c
	req := api.CreateSandboxRequest{Root: true}
	if o.memoryMB > 0 {
		req.Limits = &api.Limits{MemoryMB: o.memoryMB}
	}
	sb, err := own.create(ctx, req)
	if err != nil {
		return sr, err
	}
	defer func() { retErr = errors.Join(retErr, own.destroy(context.WithoutCancel(ctx), sb.ID)) }()
	progress("%s: writing %s of random bytes in a sandbox", fs.typ, size.label)
	script := fmt.Sprintf(`set -e; i=0; while [ $i -lt %d ]; do head -c %d /dev/urandom > /workspace/data$i; i=$((i+1)); done`, size.files, size.each)
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", script}, TimeoutMS: int((10 * time.Minute).Milliseconds())})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		return sr, fmt.Errorf("writing the data: %w", err)
	}
	res, err = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"du", "-sk", "/workspace"}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if err == nil {
		_, err = fmt.Sscan(res.Stdout, &sr.workspaceKiB)
	}
	if err != nil {
		return sr, fmt.Errorf("du /workspace: %w", err)
	}
	// On disk before the timings, so the first copy does not pay for
	// writing it back.
	if err := syncfs(fs.dir); err != nil {
		return sr, err
	}

	forks, snapshots := o.n, o.n
	if !o.only["fork"] {
		forks = -1 // not even the warm-up
	}
	if !o.only["snapshot"] {
		snapshots = -1
	}
	if forks > 0 {
		progress("%s, %s: %d forks", fs.typ, size.label, forks)
	}
	for i := -1; i < forks; i++ { // -1: the warm-up
		log.take()
		start := time.Now()
		fr, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 1})
		d := time.Since(start)
		if err == nil && len(fr.Sandboxes) != 1 {
			err = fmt.Errorf("%d sandboxes", len(fr.Sandboxes))
		}
		if err != nil {
			return sr, fmt.Errorf("fork %d: %w", i, err)
		}
		own.sandboxes[fr.Sandboxes[0].ID] = true
		caps := log.take()
		if err := own.destroy(ctx, fr.Sandboxes[0].ID); err != nil {
			return sr, err
		}
		if i < 0 {
			continue
		}
		sr.fork = append(sr.fork, d)
		sr.forkPause = append(sr.forkPause, time.Duration(fr.PauseMS)*time.Millisecond)
		if len(caps) == 1 {
			sr.forkCapture = append(sr.forkCapture, caps[0].took)
			sr.method = caps[0].method
		}
	}

	if snapshots > 0 {
		progress("%s, %s: %d snapshots, each followed by a create from it", fs.typ, size.label, snapshots)
	}
	for i := -1; i < snapshots; i++ {
		log.take()
		start := time.Now()
		snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{})
		d := time.Since(start)
		if err != nil {
			return sr, fmt.Errorf("snapshot %d: %w", i, err)
		}
		own.snapshots[snap.ID] = true
		caps := log.take()
		start = time.Now()
		from, err := own.create(ctx, api.CreateSandboxRequest{Snapshot: snap.ID, Root: true})
		dFrom := time.Since(start)
		if err != nil {
			return sr, fmt.Errorf("create from snapshot %d: %w", i, err)
		}
		if err := errors.Join(own.destroy(ctx, from.ID), own.deleteSnapshot(ctx, snap.ID)); err != nil {
			return sr, err
		}
		if i < 0 {
			continue
		}
		sr.snapBytes, sr.snapFiles = snap.Bytes, snap.Files
		sr.snap = append(sr.snap, d)
		sr.snapPause = append(sr.snapPause, time.Duration(snap.PauseMS)*time.Millisecond)
		sr.fromSnap = append(sr.fromSnap, dFrom)
		if len(caps) == 1 {
			sr.snapCapture = append(sr.snapCapture, caps[0].took)
			sr.method = caps[0].method
		}
	}
	return sr, nil
}

// timeCreates times n creates of req, each destroyed after (untimed).
func timeCreates(ctx context.Context, own *owned, n int, req api.CreateSandboxRequest) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		sb, err := own.create(ctx, req)
		d := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("create %d: %w", i, err)
		}
		if err := own.destroy(ctx, sb.ID); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// syncfs writes back what is cached of the filesystem holding dir.
func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}

// owned are the sandboxes and snapshots a measurement made and has not
// removed yet: cleanup removes them when it stops early, before the server
// stops (a server that stops leaves its sandboxes running, for the next
// start to recover).
type owned struct {
	c                    *client.Client
	sandboxes, snapshots map[string]bool
}

func newOwned(c *client.Client) *owned {
	return &owned{c: c, sandboxes: map[string]bool{}, snapshots: map[string]bool{}}
}

func (w *owned) create(ctx context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error) {
	sb, err := w.c.CreateSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	w.sandboxes[sb.ID] = true
	return sb, nil
}

func (w *owned) destroy(ctx context.Context, id string) error {
	if !w.sandboxes[id] {
		return nil
	}
	if err := w.c.DeleteSandbox(ctx, id); err != nil {
		return fmt.Errorf("destroy %s: %w", id, err)
	}
	delete(w.sandboxes, id)
	return nil
}

func (w *owned) deleteSnapshot(ctx context.Context, id string) error {
	if !w.snapshots[id] {
		return nil
	}
	if err := w.c.DeleteSnapshot(ctx, id); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", id, err)
	}
	delete(w.snapshots, id)
	return nil
}

// cleanup removes what is left, on a context of its own: an interrupted
// run removes it even so.
func (w *owned) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	var errs []error
	for id := range w.sandboxes {
		errs = append(errs, w.destroy(ctx, id))
	}
	for id := range w.snapshots {
		errs = append(errs, w.deleteSnapshot(ctx, id))
	}
	return errors.Join(errs...)
}
