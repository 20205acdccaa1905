package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Adopt labels the sandbox's Pod, Secret and NetworkPolicy as this
// node's: the node that made them was lost and this one took the
// sandbox over. The Pod runs on as it did (every node's informer sees
// it); the label says which node looks after it. What is gone already
// is no error.
func (d *Driver) Adopt(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{labelNode: d.opts.Node}}})
	if err != nil {
		return err
	}
	o := metav1.PatchOptions{}
	if _, err := d.cs.Pods(d.cfg.Namespace).Patch(ctx, st.Pod, types.MergePatchType, patch, o); ignoreNotFound(err) != nil {
		return fmt.Errorf("label the sandbox's Pod: %w", err)
	}
	if _, err := d.cs.Secrets(d.cfg.Namespace).Patch(ctx, objectName(st.sandbox()), types.MergePatchType, patch, o); ignoreNotFound(err) != nil {
		return fmt.Errorf("label the sandbox's Secret: %w", err)
	}
	if _, err := d.nets.NetworkPolicies(d.cfg.Namespace).Patch(ctx, objectName(st.sandbox()), types.MergePatchType, patch, o); ignoreNotFound(err) != nil {
		return fmt.Errorf("label the sandbox's NetworkPolicy: %w", err)
	}
	return nil
}

var _ driver.Adopter = (*Driver)(nil)
