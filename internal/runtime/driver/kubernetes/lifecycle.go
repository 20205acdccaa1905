package kubernetes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	return d.remove(ctx, sandboxOf(st.Pod))
}

// remove deletes sandbox id's Pod (at once: no grace), Secret and
// NetworkPolicy and waits, within deleteTimeout, until the cache has the
// Pod no more.
func (d *Driver) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, deleteTimeout, fmt.Errorf("the sandbox's Pod was not gone within %v", deleteTimeout))
	defer cancel()
	name := objectName(id)
	now := int64(0)
	bg := metav1.DeletePropagationBackground
	if err := d.cs.Pods(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &now, PropagationPolicy: &bg}); ignoreNotFound(err) != nil {
		return fmt.Errorf("delete the sandbox's Pod: %w", err)
	}
	if err := d.cs.Secrets(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		return fmt.Errorf("delete the sandbox's Secret: %w", err)
	}
	if err := d.nets.NetworkPolicies(d.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		return fmt.Errorf("delete the sandbox's NetworkPolicy: %w", err)
	}
	return d.pods.wait(ctx, name, func(p *corev1.Pod) (bool, error) { return p == nil, nil })
}

// Status is what the informer's cache says of the sandbox's Pod: gone
// when it is not there (deleted, or another Pod of the same name), or
// when it ended or cannot run (evicted, its node lost), with the reason.
func (d *Driver) Status(_ context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	p := d.pods.get(st.Pod)
	switch {
	case p == nil || string(p.UID) != st.UID:
		return driver.Status{State: driver.Gone, Detail: "its Pod is gone"}, nil
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

// Start is refused: a Pod cannot be stopped and started again keeping
// its files (Capabilities says StartStop false).
func (d *Driver) Start(context.Context, driver.Handle) (driver.Handle, error) {
	return driver.Handle{}, errdefs.New(errdefs.ErrUnsupported, "start_stop_unsupported", "the kubernetes driver cannot stop and start a sandbox yet")
}

// Stop is refused, as Start is.
func (d *Driver) Stop(context.Context, driver.Handle) error {
	return errdefs.New(errdefs.ErrUnsupported, "start_stop_unsupported", "the kubernetes driver cannot stop and start a sandbox yet")
}

// Sweep removes the Pods, Secrets and NetworkPolicies of the namespace
// that no sandbox known claims (whichever node made them: known asks the
// shared store): what a create cut short or a lost record left. A
// probe's are its own while it may still run.
func (d *Driver) Sweep(ctx context.Context, known func(sandboxID string) bool) ([]string, error) {
	orphans := map[string]bool{}
	claimed := func(m metav1.ObjectMeta) bool {
		id := m.Labels[labelSandbox]
		return id == "" || known(id) || m.Labels[labelProbe] != "" && time.Since(m.CreationTimestamp.Time) < probeTimeout+deleteTimeout
	}
	pods, err := d.pods.list()
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if !claimed(p.ObjectMeta) {
			orphans[p.Labels[labelSandbox]] = true
		}
	}
	secrets, err := d.cs.Secrets(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managed})
	if err != nil {
		return nil, fmt.Errorf("list the sandboxes' Secrets: %w", err)
	}
	for _, s := range secrets.Items {
		if !claimed(s.ObjectMeta) {
			orphans[s.Labels[labelSandbox]] = true
		}
	}
	policies, err := d.nets.NetworkPolicies(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managed})
	if err != nil {
		return nil, fmt.Errorf("list the sandboxes' NetworkPolicies: %w", err)
	}
	for _, p := range policies.Items {
		if !claimed(p.ObjectMeta) {
			orphans[p.Labels[labelSandbox]] = true
		}
	}
	var removed []string
	for id := range orphans {
		if err := d.remove(ctx, id); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

var _ driver.Sweeper = (*Driver)(nil)
