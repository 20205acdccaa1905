package kubernetes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
)

// The warm pool (driver.Options.WarmPool Pods per kind). A create waits
// on the kubelet for seconds (bench/README: its relists, the init
// container, then the sandbox's), so Pods of the base template are
// started ahead of need, each with a warm agent (envelope
// AwaitBootstrap) that holds a token of its own and serves nothing but
// its health and POST /bootstrap. A create of that kind takes one: it
// makes the sandbox's Secret (its envelope, for its later Pods) and
// NetworkPolicy, hands the warm agent the sandbox's envelope sealed for
// the warm token (envelope.Seal: the sandbox's token never crosses the
// network in the clear), and relabels the Pod as the sandbox's. A Pod's
// resources are fixed when it is made, so a pool is kept per kind (the
// image and the limits) that creates asked for, the most recent
// maxPoolKinds of them. A pooled sandbox's hostname is its Pod's
// (pool-<id>), not its own id, the one thing that tells it apart.
const (
	// maxPoolKinds bounds the pools kept at once.
	maxPoolKinds = 2
	// poolMaxAge is how long a warm Pod waits before it is replaced; a
	// warm object older than twice it is a lost node's or an earlier
	// run's, and any node's sweep removes it.
	poolMaxAge = 10 * time.Minute
	// labelPool marks a warm Pod, its Secret and its NetworkPolicy.
	labelPool = "hutch.dev/pool"
	// poolPrefix begins a warm Pod's sandbox label.
	poolPrefix = "pool-"
)

// warmPod is a Pod of the pool whose warm agent answered.
type warmPod struct {
	name  string
	uid   types.UID
	ip    string
	token string
}

// poolKind is what a warm Pod is made for.
type poolKind struct {
	image  string
	limits api.Limits
}

// pools are the driver's warm pools, by kind, most recent first; ctx
// ends the making of warm Pods when the driver closes.
type pools struct {
	mu     sync.Mutex
	kinds  []poolKind
	by     map[poolKind]*warm.Pool[warmPod]
	ctx    context.Context
	cancel context.CancelFunc
	// closing are the pools of kinds no longer kept, closing.
	closing sync.WaitGroup
}

// take returns a warm Pod of kind k, or false: none is ready, or the
// pool is off. It makes k's pool the most recent, closing the oldest
// beyond maxPoolKinds.
func (d *Driver) take(k poolKind) (warmPod, bool) {
	if d.opts.WarmPool <= 0 {
		return warmPod{}, false
	}
	ps := &d.pools
	ps.mu.Lock()
	p := ps.by[k]
	if p == nil {
		if ps.by == nil {
			ps.by = map[poolKind]*warm.Pool[warmPod]{}
			ps.ctx, ps.cancel = context.WithCancel(context.Background())
		}
		ctx := ps.ctx
		p = warm.New(filepath.Join(d.opts.Dir, "warm"), 0o700, d.opts.WarmPool,
			func(dir string) (warmPod, error) {
				os.Remove(dir) // a warm Pod keeps nothing on this node's disk
				return d.warmPod(ctx, k)
			},
			d.discardWarm, d.log).WithMaxAge(poolMaxAge)
		ps.by[k] = p
	}
	kinds := []poolKind{k}
	var closing []*warm.Pool[warmPod]
	for _, o := range ps.kinds {
		switch {
		case o == k:
		case len(kinds) < maxPoolKinds:
			kinds = append(kinds, o)
		default:
			closing = append(closing, ps.by[o])
			delete(ps.by, o)
		}
	}
	ps.kinds = kinds
	ps.mu.Unlock()
	for _, c := range closing {
		ps.closing.Go(c.Close)
	}
	for {
		w, ok := p.Take()
		if !ok {
			return warmPod{}, false
		}
		if pod := d.pods.get(w.name); pod != nil && pod.UID == w.uid && pod.DeletionTimestamp == nil && failed(pod) == "" {
			return w, true
		}
		d.discardWarm(w) // ended or evicted while it waited
	}
}

// closePools ends the making of warm Pods and discards every one.
func (d *Driver) closePools() {
	ps := &d.pools
	ps.mu.Lock()
	all := ps.by
	ps.by, ps.kinds = nil, nil
	if ps.cancel != nil {
		ps.cancel()
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.Close()
	}
	ps.closing.Wait()
}

// warmPod makes one warm Pod of kind k and waits until its agent
// answers.
func (d *Driver) warmPod(ctx context.Context, k poolKind) (w warmPod, retErr error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout+agentTimeout)
	defer cancel()
	id := poolPrefix + ids.New()
	w.token = ids.Token(32)
	ev := &envelope.Envelope{
		Version:        envelope.Version,
		SandboxID:      id,
		Token:          w.token,
		Listen:         ":" + strconv.Itoa(agentPort),
		OwnNetwork:     true,
		AwaitBootstrap: true,
		Root:           "/",
		Workdir:        "/",
		MaxFileBytes:   1,
	}
	framed, err := frame(ev)
	if err != nil {
		return w, err
	}
	defer func() {
		if retErr != nil {
			dctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
			defer cancel()
			if err := d.remove(dctx, id, objectName(id)); err != nil {
				d.log.Warn("remove a warm Pod that did not start", "pod", objectName(id), "err", err)
			}
		}
	}()
	policy, secret, pod := d.networkPolicy(id), d.secret(id, framed), d.pod(id, k.image, k.limits)
	for _, m := range []*metav1.ObjectMeta{&policy.ObjectMeta, &secret.ObjectMeta, &pod.ObjectMeta} {
		m.Labels[labelPool] = "true"
	}
	if err := d.makeObjects(ctx, policy, secret); err != nil {
		return w, err
	}
	h, err := d.runPod(ctx, driver.Handle{Version: driver.HandleVersion, Driver: Name, Token: w.token}, pod, k.limits)
	if err != nil {
		return w, err
	}
	st, err := decodeState(h)
	if err != nil {
		return w, err
	}
	w.name, w.uid, w.ip = st.Pod, types.UID(st.UID), h.Agent.Address
	return w, nil
}

// discardWarm deletes a warm Pod that no create took, with its Secret
// and NetworkPolicy.
func (d *Driver) discardWarm(w warmPod) {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	if err := d.remove(ctx, sandboxOf(w.name), w.name); err != nil {
		d.log.Warn("discard a warm Pod", "pod", w.name, "err", err)
	}
}

// claim makes warm Pod w sandbox spec's: the sandbox's NetworkPolicy and
// Secret (ev, for its later Pods), ev sealed for the warm agent, the Pod
// relabelled as the sandbox's. On error nothing of the sandbox is left,
// and the warm Pod is deleted.
func (d *Driver) claim(ctx context.Context, spec driver.Spec, w warmPod, ev *envelope.Envelope, framed []byte, image, workdir string) (h driver.Handle, retErr error) {
	id := spec.SandboxID
	defer func() {
		if retErr != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
			defer cancel()
			if err := d.remove(dctx, id, objectName(id)); err != nil {
				d.log.Warn("remove a sandbox whose warm Pod failed", logattr.Sandbox(id), "err", err)
			}
			d.discardWarm(w)
		}
	}()
	if err := d.makeObjects(ctx, d.networkPolicy(id), d.secret(id, framed)); err != nil {
		return h, err
	}
	// The sandbox's policy selects the Pod from here; the warm one
	// stopped selecting it.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{labelSandbox: id, labelPool: nil}}})
	if err != nil {
		return h, err
	}
	if _, err := d.cs.Pods(d.cfg.Namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return h, fmt.Errorf("label the warm Pod as the sandbox's: %w", err)
	}
	sealed, err := envelope.Seal(ev, w.token)
	if err != nil {
		return h, err
	}
	c := agentclient.New("tcp", w.ip, w.token)
	err = c.Bootstrap(ctx, sealed)
	c.Close()
	if err != nil {
		return h, fmt.Errorf("hand the warm agent its sandbox: %w", err)
	}
	h = driver.Handle{
		Version: driver.HandleVersion,
		Driver:  Name,
		Agent:   driver.Endpoint{Network: "tcp", Address: w.ip, Info: agentproto.Current()},
		Token:   spec.Token,
		Workdir: workdir,
	}
	if h.State, err = json.Marshal(handleState{Pod: w.name, UID: string(w.uid), Image: image, Limits: spec.Limits, Sandbox: id}); err != nil {
		return h, err
	}
	if err := waitAgent(ctx, h); err != nil {
		return h, err
	}
	// The warm Pod's own objects are done with.
	if err := d.deleteObjects(ctx, sandboxOf(w.name)); err != nil {
		d.log.Warn("delete a claimed warm Pod's Secret and NetworkPolicy", "pod", w.name, "err", err)
	}
	return h, nil
}

// frame checks ev and frames it as on stdin, in base64: what a Secret
// holds for the agent's $HUTCH_AGENT_ENVELOPE.
func frame(ev *envelope.Envelope) ([]byte, error) {
	if err := ev.Validate(); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "invalid_sandbox", err, "the sandbox's settings")
	}
	var framed bytes.Buffer
	if err := envelope.Encode(&framed, ev); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(framed.Bytes())), nil
}

// dropEarlierWarm asks for the deletion of the warm Pods, Secrets and
// NetworkPolicies an earlier run of this node left (Close deletes its
// own, but a killed process could not); without waiting for the Pods.
func (d *Driver) dropEarlierWarm(ctx context.Context) {
	pods, err := d.pods.list()
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Labels[labelPool] == "" || p.Labels[labelNode] != d.opts.Node {
			continue
		}
		if err := errors.Join(d.deletePodWithin(ctx, p.Name, killGrace), d.deleteObjects(ctx, p.Labels[labelSandbox])); err != nil {
			d.log.Warn("delete an earlier run's warm Pod", "pod", p.Name, "err", err)
		}
	}
}
