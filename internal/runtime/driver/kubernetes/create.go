package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Bounds of a create: the Pod's scheduling, image pulls and start, then
// the agent's first answer; and of a teardown.
const (
	startTimeout  = 3 * time.Minute
	agentTimeout  = 30 * time.Second
	deleteTimeout = time.Minute
)

// Create makes the sandbox's NetworkPolicy, Secret and Pod and waits
// until its agent answers. On error nothing of it is left.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (driver.Handle, error) {
	return d.create(ctx, spec, false)
}

// create is Create; a probe's objects carry labelProbe, so that a sweep
// leaves them to the probe.
func (d *Driver) create(ctx context.Context, spec driver.Spec, probe bool) (h driver.Handle, retErr error) {
	tpl, err := d.template(ctx, spec)
	if err != nil {
		return h, err
	}
	workdir, err := resolveCwd(tpl.workdir, spec.Cwd)
	if err != nil {
		return h, err
	}
	// Commands run as the template's user, or as root where the sandbox
	// or a call asks for it.
	env := tpl.env
	env["HUTCH_SANDBOX_ID"] = spec.SandboxID
	runAs := tpl.user
	if spec.Root || runAs != nil && runAs.UID == 0 {
		env["HOME"], env["USER"], runAs = "/root", "root", nil
	}
	// Everything leaves through the agent's forwarder to the control
	// plane's egress proxy (egress.go): the Pod has no other way out.
	maps.Copy(env, driver.ProxyEnv("http://"+agentproto.EgressAddr))
	maps.Copy(env, spec.Env)
	ev := &envelope.Envelope{
		Version:   envelope.Version,
		SandboxID: spec.SandboxID,
		Token:     spec.Token,
		Listen:    ":" + strconv.Itoa(agentPort),
		// A Pod's network namespace is its own: its loopback is the
		// sandbox's.
		OwnNetwork:    true,
		EgressStreams: true,
		// Snapshots are layers of what changed over the Pod's image
		// (snapshot.go).
		LayerSnapshots: true,
		Root:           "/",
		Workdir:        workdir,
		Env:            env,
		MaxFileBytes:   spec.MaxFileBytes,
		MaxTarBytes:    spec.MaxTarBytes,
		RunAs:          runAs,
		// One command cannot take the container's memory: the agent,
		// whose memory it shares, could be the kernel's victim then.
		CommandRlimits: commandRlimits(spec.Limits),
	}
	framed, err := frame(ev)
	if err != nil {
		return h, err
	}
	// A warm Pod of the pool (pool.go), where one of its kind is ready;
	// not for a snapshot's image, which no pool is kept of.
	if !probe && spec.Snapshot == "" {
		if w, ok := d.take(poolKind{image: tpl.image, limits: spec.Limits}); ok {
			h, err := d.claim(ctx, spec, w, ev, framed, tpl.image, workdir)
			if err == nil || ctx.Err() != nil {
				return h, err
			}
			d.log.Warn("a warm Pod could not be claimed; making a Pod", logattr.Sandbox(spec.SandboxID), "err", err)
		}
	}

	// From here on, a failure removes what was made, with a context of
	// its own: the request's may be what ended.
	defer func() {
		if retErr != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
			defer cancel()
			if err := d.remove(dctx, spec.SandboxID, objectName(spec.SandboxID)); err != nil {
				d.log.Warn("remove a sandbox that failed to start", logattr.Sandbox(spec.SandboxID), "err", err)
			}
		}
	}()
	policy := d.networkPolicy(spec.SandboxID)
	secret := d.secret(spec.SandboxID, framed)
	pod := d.pod(spec.SandboxID, tpl.image, spec.Limits)
	if probe {
		for _, m := range []*metav1.ObjectMeta{&policy.ObjectMeta, &secret.ObjectMeta, &pod.ObjectMeta} {
			m.Labels[labelProbe] = "true"
		}
	}
	// The Secret outlives the sandbox's Pods: a stop, a start or a
	// restore replaces the Pod, and the next one reads the same envelope.
	if err := d.makeObjects(ctx, policy, secret); err != nil {
		return h, err
	}
	h = driver.Handle{Version: driver.HandleVersion, Driver: Name, Token: spec.Token, Workdir: workdir}
	return d.runPod(ctx, h, pod, spec.Limits)
}

// runPod creates pod, a sandbox's, waits until it runs and its agent
// answers, and returns h reaching it. A Pod of the sandbox that is there
// already is a conflict (sandbox_running).
func (d *Driver) runPod(ctx context.Context, h driver.Handle, pod *corev1.Pod, limits api.Limits) (driver.Handle, error) {
	image := pod.Spec.Containers[0].Image
	pod, err := d.cs.Pods(d.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return h, errdefs.Conflict("sandbox_running", "the sandbox's Pod is there already: it runs, or is still being deleted")
	}
	if err != nil {
		return h, fmt.Errorf("create the sandbox's Pod: %w", err)
	}
	ip, err := d.waitRunning(ctx, pod.Name, pod.UID)
	if err != nil {
		return h, err
	}
	h.Agent = driver.Endpoint{Network: "tcp", Address: net.JoinHostPort(ip, strconv.Itoa(agentPort)), Info: agentproto.Current()}
	if h.State, err = json.Marshal(handleState{Pod: pod.Name, UID: string(pod.UID), Image: image, Limits: limits}); err != nil {
		return h, err
	}
	if err := waitAgent(ctx, h); err != nil {
		return h, err
	}
	return h, nil
}

// agentReserveMB is what of a sandbox's memory one command may not take,
// left to the agent and the rest (commandRlimits).
const agentReserveMB = 24

// commandRlimits cap each command's data (RLIMIT_DATA) below the memory
// limit by agentReserveMB (half of a small limit), so that one command
// that runs away fails to allocate instead of bringing the container to
// the kernel's out-of-memory killer, which may choose the agent: it
// shares the container's memory cgroup (the namespace driver gives it
// its own). Several commands together can still fill it.
func commandRlimits(l api.Limits) []confine.Rlimit {
	if l.MemoryMB <= 0 {
		return nil
	}
	mb := max(l.MemoryMB-agentReserveMB, l.MemoryMB/2)
	b := uint64(mb) << 20
	return []confine.Rlimit{{Resource: "data", Cur: b, Max: b}}
}

// sandboxImage is what a sandbox starts from: an image in the registry,
// its working directory and environment, and whom commands run as (nil:
// root).
type sandboxImage struct {
	image   string
	workdir string
	env     map[string]string
	user    *envelope.RunAs
}

// template is what spec's template starts from: the base image, or an
// image template's, which it pushes the first time.
func (d *Driver) template(ctx context.Context, spec driver.Spec) (sandboxImage, error) {
	tpl, err := d.templateOf(ctx, spec)
	if err != nil || spec.Snapshot == "" {
		return tpl, err
	}
	// From a snapshot: the template's settings, the snapshot's image.
	tpl.image, err = d.snapshotRef(spec.Snapshot)
	return tpl, err
}

// templateOf is what spec's template starts from (its image pushed only
// when spec starts from it, not from a snapshot of it).
func (d *Driver) templateOf(ctx context.Context, spec driver.Spec) (sandboxImage, error) {
	switch {
	case len(spec.Volumes) > 0:
		return sandboxImage{}, errdefs.New(errdefs.ErrUnsupported, "volumes_unsupported", "the kubernetes driver does not mount volumes yet")
	case spec.Image != nil:
		var ref string
		if spec.Snapshot == "" {
			var err error
			if ref, err = d.templateRef(ctx, spec.Image); err != nil {
				return sandboxImage{}, err
			}
		}
		u := spec.Image.User
		env := imageEnv(spec.Image)
		env["HOME"], env["USER"] = cmp.Or(u.Home, "/"), cmp.Or(u.Name, strconv.Itoa(int(u.UID)))
		if env["PATH"] == "" {
			env["PATH"] = basePath
		}
		return sandboxImage{image: ref, workdir: cmp.Or(spec.Image.WorkingDir, "/"), env: env, user: &envelope.RunAs{UID: u.UID, GID: u.GID}}, nil
	case spec.Template != "" && spec.Template != hostTemplate:
		return sandboxImage{}, errdefs.Invalid("invalid_template", "the kubernetes driver has the %q template (its base image) and image templates", hostTemplate)
	}
	return sandboxImage{
		image:   d.images.base,
		workdir: workspace,
		env:     map[string]string{"HOME": workspace, "PATH": basePath, "USER": "user"},
		user:    &envelope.RunAs{UID: userUID, GID: userUID},
	}, nil
}

// resolveCwd is the sandbox's working directory: cwd, absolute or
// relative to workdir, never above it by "..".
func resolveCwd(workdir, cwd string) (string, error) {
	switch {
	case cwd == "":
		return workdir, nil
	case strings.ContainsRune(cwd, 0):
		return "", errdefs.Invalid("invalid_path", "cwd contains a NUL byte")
	case path.IsAbs(cwd):
		return path.Clean(cwd), nil
	}
	p := path.Join(workdir, cwd)
	if p != workdir && !strings.HasPrefix(p, strings.TrimSuffix(workdir, "/")+"/") {
		return "", errdefs.Invalid("path_outside_sandbox", "cwd %q climbs out of %s; give an absolute path", cwd, workdir)
	}
	return p, nil
}

// waitRunning waits until the Pod named name (of uid) runs and has an
// IP, and returns the IP. A Pod that cannot start (its image cannot be
// pulled, its container not made or ended) fails at once, with the
// kubelet's reason.
func (d *Driver) waitRunning(parent context.Context, name string, uid types.UID) (string, error) {
	ctx, cancel := context.WithTimeout(parent, startTimeout)
	defer cancel()
	var ip, pending string
	err := d.pods.wait(ctx, name, func(p *corev1.Pod) (bool, error) {
		if p == nil || p.UID != uid {
			return false, nil
		}
		if why := failed(p); why != "" {
			return false, errdefs.New(errdefs.ErrUnavailable, "sandbox_start_failed", "the sandbox's Pod cannot start: %s", why)
		}
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ip = p.Status.PodIP
			return true, nil
		}
		pending = pendingReason(p)
		return false, nil
	})
	if err != nil && parent.Err() == nil && ctx.Err() != nil {
		return "", errdefs.Wrap(errdefs.ErrUnavailable, "sandbox_start_timeout", err, "the sandbox's Pod did not run within %v (%s)", startTimeout, pending)
	}
	return ip, err
}

// pendingReason says what a Pod that does not run yet waits for: the
// scheduler's reason it was not placed (no node has room), or its
// phase.
func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "not scheduled: " + c.Message
		}
	}
	return "Pod " + phaseOf(p)
}

// unstartable are the waiting reasons of a container that will not
// start without someone's help.
var unstartable = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"CrashLoopBackOff": true,
}

// failed says why Pod p will not run, or "" while it may.
func failed(p *corev1.Pod) string {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		why := p.Status.Reason
		if p.Status.Message != "" {
			why += ": " + p.Status.Message
		}
		for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
				why += fmt.Sprintf(" container %s exited %d (%s) %s", c.Name, t.ExitCode, t.Reason, t.Message)
			}
		}
		if strings.TrimSpace(why) == "" {
			why = "it ended"
		}
		return strings.TrimSpace(why)
	}
	// slices.Concat, not append: p is the informer's cached object, whose
	// slices must not be written.
	for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := c.State.Waiting; w != nil && unstartable[w.Reason] {
			return fmt.Sprintf("container %s: %s: %s", c.Name, w.Reason, w.Message)
		}
	}
	return ""
}

// waitAgent waits until the agent of h answers a health check.
func waitAgent(ctx context.Context, h driver.Handle) error {
	ctx, cancel := context.WithTimeout(ctx, agentTimeout)
	defer cancel()
	c := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token)
	defer c.Close()
	var last error
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if _, last = c.Health(ctx); last == nil {
			return nil
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", last, "the sandbox's agent at %s did not answer within %v", h.Agent.Address, agentTimeout)
			}
			return context.Cause(ctx)
		}
	}
}

// decodeState reads the driver's part of h.
func decodeState(h driver.Handle) (handleState, error) {
	var st handleState
	if h.Driver != Name || h.Version != driver.HandleVersion {
		return st, fmt.Errorf("handle is for driver %q version %d, not %s version %d", h.Driver, h.Version, Name, driver.HandleVersion)
	}
	if err := json.Unmarshal(h.State, &st); err != nil {
		return st, fmt.Errorf("decode kubernetes handle: %w", err)
	}
	return st, nil
}
