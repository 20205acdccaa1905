package testutil

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// The test cluster: .ci/k8s/k8s-up starts a real single-node cluster
// with a registry it pulls from, and CI names both in these variables.
const (
	KubeconfigEnv        = "HUTCH_TEST_KUBECONFIG"
	KubeRegistryEnv      = "HUTCH_TEST_KUBERNETES_REGISTRY"
	RequireKubernetesEnv = "HUTCH_REQUIRE_KUBERNETES"
)

// Cluster is the test cluster, a namespace of a test's own in it, and a
// client.
type Cluster struct {
	Kubeconfig string
	Registry   string
	Namespace  string
	Client     k8s.Interface
}

// Kubernetes returns the test cluster with a new namespace of t's own,
// deleted (with whatever is left in it) when t ends. Without a cluster
// it skips t, unless RequireKubernetesEnv is 1.
func Kubernetes(t testing.TB) Cluster {
	t.Helper()
	c := Cluster{Kubeconfig: os.Getenv(KubeconfigEnv), Registry: os.Getenv(KubeRegistryEnv)}
	if c.Kubeconfig == "" || c.Registry == "" {
		if os.Getenv(RequireKubernetesEnv) == "1" {
			t.Fatalf("no test cluster: $%s and $%s must name one (.ci/k8s/k8s-up starts it)", KubeconfigEnv, KubeRegistryEnv)
		}
		t.Skipf("no test cluster: set $%s and $%s (.ci/k8s/k8s-up starts one)", KubeconfigEnv, KubeRegistryEnv)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.Client, err = k8s.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	c.Namespace = "hutch-test-" + ids.Token(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", c.Namespace, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Client.CoreV1().Namespaces().Delete(ctx, c.Namespace, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", c.Namespace, err)
		}
	})
	return c
}
