package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Snapshots, and stop and start. A Pod's files are its image's under an
// upper layer on its node that hutch cannot reach, so the agent writes
// what changed in its root since it started as an image layer
// (files.WriteLayer), its sandbox's processes stopped meanwhile, and a
// snapshot is the Pod's image with that layer on top, pushed to the
// cluster's registry (snapshotRepo). A sandbox from a snapshot is a Pod
// of that image, placed by the cluster on any node, and any hutch node
// can make it: the registry, not a node's disk, keeps the files. The
// snapshot's directory holds only the image's reference (snapshotFile).
// A stop is such an image, named on the sandbox's Secret
// (annotationStopped), then the Pod's deletion; a start is a Pod of it.
//
// A fork is not flat here: each snapshot is one layer more over the last
// (the registry keeps each layer once, whatever shares it), so past
// maxLayers a sandbox cannot be snapshotted or stopped. The registry
// keeps every image the driver pushed; deleting a snapshot removes its
// record, not its image, which a sandbox started from it may still build
// on (see docs/deploy/kubernetes.md for pruning).
const (
	snapshotRepo      = "hutch/snapshots"
	snapshotFile      = "image.json"
	annotationStopped = "hutch.dev/stopped-image"
	// maxLayers bounds an image's layers: containerd mounts them as the
	// lower directories of one overlay, whose options fit in a page
	// (about 128 layers).
	maxLayers = 100
	// layerMethod is SnapshotStats.Method of the driver's snapshots.
	layerMethod = "layer"
)

// snapshotRecord is what a snapshot's directory holds.
type snapshotRecord struct {
	Image string `json:"image"`
}

// Snapshot writes the sandbox's changes as a layer over its Pod's image,
// pushes that image and records its reference in dst.
func (d *Driver) Snapshot(ctx context.Context, h driver.Handle, dst string) (driver.SnapshotStats, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.SnapshotStats{}, err
	}
	if err := snapshottable(st); err != nil {
		return driver.SnapshotStats{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return driver.SnapshotStats{}, err
	}
	defer os.RemoveAll(tmp) // nothing once renamed
	ref, stats, err := d.capture(ctx, h, st.Image, tmp, "snap-"+filepath.Base(dst))
	if err != nil {
		return stats, err
	}
	b, err := json.Marshal(snapshotRecord{Image: ref})
	if err != nil {
		return stats, err
	}
	if err := os.WriteFile(filepath.Join(tmp, snapshotFile), b, 0o600); err != nil {
		return stats, err
	}
	return stats, os.Rename(tmp, dst)
}

// Restore replaces the sandbox's Pod with one of the snapshot's image.
func (d *Driver) Restore(ctx context.Context, h driver.Handle, src string) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	ref, err := d.snapshotRef(src)
	if err != nil {
		return h, err
	}
	if err := d.keepSecret(ctx, objectName(st.sandbox()), nil); err != nil {
		return h, err
	}
	if err := d.deletePod(ctx, st.Pod); err != nil {
		return h, err
	}
	return d.runPod(ctx, h, d.pod(st.sandbox(), ref, st.Limits), st.Limits)
}

// RemoveSnapshot removes the snapshot's record; its image stays in the
// registry (see the comment at the top).
func (d *Driver) RemoveSnapshot(dir string) error { return os.RemoveAll(dir) }

// Stop keeps the sandbox's files as an image the Secret names, then
// deletes its Pod, every process with it. A sandbox stopped already is
// no error.
func (d *Driver) Stop(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	if p := d.pods.get(st.Pod); p == nil || string(p.UID) != st.UID {
		if stopped, err := d.stoppedImage(ctx, objectName(st.sandbox())); err != nil || stopped != "" {
			return err
		}
		return errdefs.New(errdefs.ErrUnavailable, "sandbox_gone", "the sandbox's Pod is gone, and no stop kept its files")
	}
	if err := snapshottable(st); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(d.opts.Dir, "stop-") // Open made the directory
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ref, _, err := d.capture(ctx, h, st.Image, tmp, "stop-"+st.sandbox())
	if err != nil {
		return err
	}
	if err := d.keepSecret(ctx, objectName(st.sandbox()), map[string]any{annotationStopped: ref}); err != nil {
		return err
	}
	return d.deletePod(ctx, st.Pod)
}

// Start runs a Pod of the image the sandbox's stop kept; a Pod of the
// sandbox that is there (it runs, or another start made it) is a
// conflict. A Pod that does not come up is deleted: the sandbox stays
// stopped.
func (d *Driver) Start(ctx context.Context, h driver.Handle) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	if p := d.pods.get(st.Pod); p != nil && p.DeletionTimestamp == nil {
		return h, errdefs.Conflict("sandbox_running", "the sandbox's Pod runs")
	}
	ref, err := d.stoppedImage(ctx, objectName(st.sandbox()))
	if err != nil {
		return h, err
	}
	if ref == "" {
		return h, errdefs.New(errdefs.ErrUnavailable, "sandbox_gone", "no stop kept the sandbox's files")
	}
	nh, err := d.runPod(ctx, h, d.pod(st.sandbox(), ref, st.Limits), st.Limits)
	if err != nil {
		if !errors.Is(err, errdefs.ErrConflict) {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
			defer cancel()
			if derr := d.deletePod(dctx, st.Pod); derr != nil {
				d.log.Warn("delete a sandbox's Pod that did not start", "pod", st.Pod, "err", derr)
			}
		}
		return h, err
	}
	// It runs: a Pod of it that vanishes later is gone, not stopped.
	if err := d.keepSecret(ctx, objectName(st.sandbox()), map[string]any{annotationStopped: nil}); err != nil {
		d.log.Warn("clear a started sandbox's stop", "pod", st.Pod, "err", err)
	}
	return nh, nil
}

// snapshottable refuses a sandbox whose image is unknown (made before
// the driver took snapshots); pushLayer refuses one too deep for
// another layer.
func snapshottable(st handleState) error {
	if st.Image == "" {
		return errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported", "the sandbox was made before the kubernetes driver took snapshots: it cannot be snapshotted or stopped")
	}
	return nil
}

// capture has the sandbox's agent write its layer into dir and pushes
// the image of parent and that layer to snapshotRepo, tagged tag. It
// returns the image's reference by digest.
func (d *Driver) capture(ctx context.Context, h driver.Handle, parent, dir, tag string) (string, driver.SnapshotStats, error) {
	var stats driver.SnapshotStats
	path := filepath.Join(dir, "layer.tar")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", stats, err
	}
	defer os.Remove(path)
	c := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token)
	defer c.Close()
	ls, err := c.SnapshotLayer(ctx, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", stats, err
	}
	stats = driver.SnapshotStats{Pause: ls.Pause, Frozen: ls.Frozen, Bytes: ls.Bytes, Files: ls.Entries, Method: layerMethod}
	start := time.Now()
	ref, err := d.pushLayer(ctx, parent, path, tag)
	if err != nil {
		return "", stats, err
	}
	d.log.Debug("snapshot image pushed", "image", ref, "entries", ls.Entries, "bytes", ls.Bytes, "took", time.Since(start).Round(time.Millisecond))
	return ref, stats, nil
}

// pushLayer pushes the image of parent with the layer (an uncompressed
// tar) on top, to snapshotRepo, tagged tag; parent's layers are mounted
// from its repository, not sent again.
func (d *Driver) pushLayer(ctx context.Context, parent, layerPath, tag string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, imageTimeout)
	defer cancel()
	pref, err := name.ParseReference(parent, nameOptions(d.cfg.Registry)...)
	if err != nil {
		return "", fmt.Errorf("the sandbox's image %q: %w", parent, err)
	}
	base, err := remote.Image(pref, remote.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("read the sandbox's image %s from the registry: %w", parent, err)
	}
	layers, err := base.Layers()
	if err != nil {
		return "", err
	}
	if len(layers) >= maxLayers {
		return "", errdefs.New(errdefs.ErrUnsupported, "snapshot_too_deep", "the sandbox's image has %d layers, each a snapshot or stop of it or of the sandbox it came from; the kubernetes driver stops at %d: make a template of it", len(layers), maxLayers)
	}
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return "", err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: time.Now().UTC()}, CreatedBy: "hutch snapshot"}})
	if err != nil {
		return "", err
	}
	return pushTagged(ctx, d.cfg.Registry, snapshotRepo, tagOf(tag), img)
}

// snapshotRef is the image of the snapshot at dir. A hutch snapshot
// whose record went with the disk of the node that took it (a replica's
// emptyDir) is found by its tag.
func (d *Driver) snapshotRef(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	switch {
	case errors.Is(err, fs.ErrNotExist) && ids.Valid(filepath.Base(dir)):
		return d.cfg.Registry + "/" + snapshotRepo + ":" + tagOf("snap-"+filepath.Base(dir)), nil
	case errors.Is(err, fs.ErrNotExist):
		return "", errdefs.NotFound("snapshot_not_found", "no snapshot of the kubernetes driver at %s", dir)
	case err != nil:
		return "", err
	}
	var rec snapshotRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Image == "" {
		return "", fmt.Errorf("the snapshot's record %s: %v", filepath.Join(dir, snapshotFile), err)
	}
	return rec.Image, nil
}

// tagChars are what a tag may not hold.
var tagChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// tagOf makes s a valid tag: other characters become "_", at most 128.
func tagOf(s string) string {
	s = tagChars.ReplaceAllString(s, "_")
	return s[:min(len(s), 128)]
}
