package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/drivertest"
	"github.com/hutchdev/hutch/internal/runtime/driver/kubernetes"
	"github.com/hutchdev/hutch/internal/testutil"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestConformance runs the driver conformance suite on the test cluster:
// each sandbox a Pod of the base template's image, reached over the Pod
// network.
func TestConformance(t *testing.T) {
	c := testutil.Kubernetes(t)
	node := "test-" + ids.Token(4)
	dir := t.TempDir()
	drivertest.Run(t, drivertest.Suite{
		New: func(t *testing.T) driver.Driver {
			d, err := kubernetes.New(driver.Options{
				Dir:       dir,
				AgentPath: filepath.Join(binDir, "hutch-agent"),
				Node:      node,
				Kubernetes: driver.KubernetesOptions{
					Kubeconfig: c.Kubeconfig, Namespace: c.Namespace, Registry: c.Registry, Required: true,
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := d.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d
		},
		Leftovers: func(id string) []string {
			var left []string
			sel := metav1.ListOptions{LabelSelector: "hutch.dev/sandbox=" + id}
			pods, err := c.Client.CoreV1().Pods(c.Namespace).List(context.Background(), sel)
			if err != nil {
				return []string{err.Error()}
			}
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Name)
			}
			secrets, err := c.Client.CoreV1().Secrets(c.Namespace).List(context.Background(), sel)
			if err != nil {
				return []string{err.Error()}
			}
			for _, s := range secrets.Items {
				left = append(left, "secret "+s.Name)
			}
			return left
		},
	})
}
