package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Destroy deletes the sandbox's Pod, Secret and NetworkPolicy and waits
// until the Pod is gone, its processes with it. What is gone already is
// no error.
func (d *Driver) Destroy(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.remove(ctx, st.sandbox(), st.Pod)
}

// remove deletes sandbox id's Pod, named pod (deletePod), and its Secret
// and NetworkPolicy.
func (d *Driver) remove(ctx context.Context, id, pod string) error {
	if err := d.deletePod(ctx, pod); err != nil {
		return err
	}
	return d.deleteObjects(ctx, id)
}

// makeObjects creates the NetworkPolicy, then the Secret, of a sandbox
// or a warm Pod: the policy first, so that its Pod never runs without
// it.
func (d *Driver) makeObjects(ctx context.Context, policy *networkingv1.NetworkPolicy, secret *corev1.Secret) error {
	if _, err := d.nets.NetworkPolicies(d.cfg.Namespace).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the NetworkPolicy %s: %w", policy.Name, err)
	}
	if _, err := d.cs.Secrets(d.cfg.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the Secret %s: %w", secret.Name, err)
	}
	return nil
}

// deleteObjects deletes the Secret and the NetworkPolicy of sandbox (or
// warm Pod) id; what is gone already is no error.
func (d *Driver) deleteObjects(ctx context.Context, id string) error {
	name := objectName(id)
	var errs []error
	if err := d.cs.Secrets(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, fmt.Errorf("delete the Secret %s: %w", name, err))
	}
	if err := d.nets.NetworkPolicies(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		errs = append(errs, fmt.Errorf("delete the NetworkPolicy %s: %w", name, err))
	}
	return errors.Join(errs...)
}

// Bounds of a Pod's deletion: the kubelet is given killGrace to stop its
// containers (the agent, sent SIGTERM, ends its whole tree at once) and
// gracefulTimeout to report them ended, which removes the Pod; a Pod
// still there then (its node does not answer) is deleted by force, and
// deleteTimeout bounds it all.
const (
	killGrace       = int64(1)
	gracefulTimeout = 30 * time.Second
)

// deletePod deletes Pod name and waits until it is gone: its processes
// have ended, unless its node did not answer within gracefulTimeout.
func (d *Driver) deletePod(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, deleteTimeout, fmt.Errorf("the sandbox's Pod was not gone within %v", deleteTimeout))
	defer cancel()
	gone := func(p *corev1.Pod) (bool, error) { return p == nil, nil }
	if err := d.deletePodWithin(ctx, name, killGrace); err != nil {
		return err
	}
	gctx, gcancel := context.WithTimeout(ctx, gracefulTimeout)
	err := d.pods.wait(gctx, name, gone)
	gcancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	d.log.Warn("a sandbox's Pod was not gone in time: deleting it by force", "pod", name, "within", gracefulTimeout)
	if err := d.deletePodWithin(ctx, name, 0); err != nil {
		return err
	}
	return d.pods.wait(ctx, name, gone)
}

// deletePodWithin asks for Pod name's deletion with grace seconds (0:
// at once, by force).
func (d *Driver) deletePodWithin(ctx context.Context, name string, grace int64) error {
	bg := metav1.DeletePropagationBackground
	if err := d.cs.Pods(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: &bg}); ignoreNotFound(err) != nil {
		return fmt.Errorf("delete the sandbox's Pod: %w", err)
	}
	return nil
}

// keepSecret makes the sandbox's Secret (named name) outlive its Pod (a
// sandbox made before it did had its Pod own it) and sets annotations
// (nil removes one).
func (d *Driver) keepSecret(ctx context.Context, name string, annotations map[string]any) error {
	meta := map[string]any{"ownerReferences": nil}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := d.cs.Secrets(d.cfg.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return errdefs.New(errdefs.ErrUnavailable, "sandbox_gone", "the sandbox's Secret is gone")
		}
		return fmt.Errorf("keep the sandbox's Secret: %w", err)
	}
	return nil
}

// stoppedImage is the image the sandbox's last stop kept, from its
// Secret (named name); "" when none did, and an error when the Secret is
// gone.
func (d *Driver) stoppedImage(ctx context.Context, name string) (string, error) {
	s, err := d.cs.Secrets(d.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", errdefs.New(errdefs.ErrUnavailable, "sandbox_gone", "the sandbox's Secret is gone")
	}
	if err != nil {
		return "", fmt.Errorf("read the sandbox's Secret: %w", err)
	}
	return s.Annotations[annotationStopped], nil
}

// Status is what the informer's cache says of the sandbox's Pod: gone
// when it is not there (deleted, or another Pod of the same name), or
// when it ended or cannot run (evicted, its node lost), with the reason.
func (d *Driver) Status(ctx context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	p := d.pods.get(st.Pod)
	switch {
	case p == nil:
		// No Pod: stopped, when a stop kept the files (the Secret says
		// so), or gone.
		if ref, err := d.stoppedImage(ctx, objectName(st.sandbox())); err == nil && ref != "" {
			return driver.Status{State: driver.Stopped, Detail: "stopped, its files kept as " + ref}, nil
		}
		return driver.Status{State: driver.Gone, Detail: "its Pod is gone"}, nil
	case string(p.UID) != st.UID:
		return driver.Status{State: driver.Gone, Detail: "its Pod is another"}, nil
	case p.DeletionTimestamp != nil:
		return driver.Status{State: driver.Gone, Detail: "its Pod is being deleted"}, nil
	}
	if why := failed(p); why != "" {
		return driver.Status{State: driver.Gone, Detail: "its Pod ended: " + why}, nil
	}
	return driver.Status{State: driver.Running, Detail: "Pod " + phaseOf(p)}, nil
}

// Recover is Status: the Pod runs on whatever the control plane did.
func (d *Driver) Recover(ctx context.Context, h driver.Handle) (driver.Status, error) {
	return d.Status(ctx, h)
}

// Sweep removes the Pods, Secrets and NetworkPolicies of the namespace
// that no sandbox known claims (whichever node made them: known asks the
// shared store): what a create cut short or a lost record left. A
// probe's are its own while it may still run, and a warm Pod's (pool.go)
// its pool's until it is twice poolMaxAge old.
func (d *Driver) Sweep(ctx context.Context, known func(sandboxID string) bool) ([]string, error) {
	orphans := map[string]string{} // sandbox → its Pod's name
	claimed := func(m metav1.ObjectMeta) bool {
		id, age := m.Labels[labelSandbox], time.Since(m.CreationTimestamp.Time)
		switch {
		case id == "" || known(id):
			return true
		case m.Labels[labelPool] != "":
			return age < 2*poolMaxAge
		}
		return m.Labels[labelProbe] != "" && age < probeTimeout+deleteTimeout
	}
	pods, err := d.pods.list()
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if !claimed(p.ObjectMeta) {
			orphans[p.Labels[labelSandbox]] = p.Name
		}
	}
	secrets, err := d.cs.Secrets(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managed})
	if err != nil {
		return nil, fmt.Errorf("list the sandboxes' Secrets: %w", err)
	}
	policies, err := d.nets.NetworkPolicies(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managed})
	if err != nil {
		return nil, fmt.Errorf("list the sandboxes' NetworkPolicies: %w", err)
	}
	metas := make([]metav1.ObjectMeta, 0, len(secrets.Items)+len(policies.Items))
	for _, s := range secrets.Items {
		metas = append(metas, s.ObjectMeta)
	}
	for _, p := range policies.Items {
		metas = append(metas, p.ObjectMeta)
	}
	for _, m := range metas {
		if id := m.Labels[labelSandbox]; !claimed(m) && orphans[id] == "" {
			orphans[id] = objectName(id)
		}
	}
	var removed []string
	for id, pod := range orphans {
		if err := d.remove(ctx, id, pod); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

var _ driver.Sweeper = (*Driver)(nil)
