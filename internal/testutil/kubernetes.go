package testutil

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

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

// PushImage pushes to registry (plain HTTP: the test cluster's) an image
// named repo of the host's files, each at the path files maps it to,
// with config, and returns its reference by digest.
func PushImage(ctx context.Context, registry, repo string, config v1.Config, files map[string]string) (string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dst := range slices.Sorted(maps.Keys(files)) {
		body, err := os.ReadFile(files[dst])
		if err != nil {
			return "", err
		}
		h := &tar.Header{Name: strings.TrimPrefix(dst, "/"), Mode: 0o555, Size: int64(len(body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		if _, err := tw.Write(body); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return "", err
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH, Config: config, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		return "", err
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return "", err
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(registry+"/"+repo+":test", name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return "", err
	}
	return registry + "/" + repo + "@" + digest.String(), nil
}

// NodeAddress is the InternalIP of the test cluster's node: where its
// Pods reach the host.
func (c Cluster) NodeAddress(ctx context.Context) (string, error) {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				return a.Address, nil
			}
		}
	}
	return "", errors.New("the test cluster's node has no InternalIP")
}

// Kubectl is the test cluster's kubectl: beside its binaries
// (.ci/k8s/k8s-up keeps the kubeconfig in state/ and kubectl in bin/),
// else the one on $PATH.
func (c Cluster) Kubectl() string {
	k := filepath.Join(filepath.Dir(filepath.Dir(c.Kubeconfig)), "bin", "kubectl")
	if _, err := os.Stat(k); err == nil {
		return k
	}
	return "kubectl"
}
