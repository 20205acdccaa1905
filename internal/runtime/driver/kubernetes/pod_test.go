package kubernetes

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// TestPodHardened: a sandbox's Pod mounts no service-account token,
// escalates no privilege, keeps no capability but the agent's six (its
// init container none), runs under the runtime's seccomp profile, and
// asks the scheduler for a share of its limits; the options add a
// runtime class and a user namespace.
func TestPodHardened(t *testing.T) {
	d := &Driver{cfg: driver.KubernetesOptions{Namespace: "ns", RuntimeClass: "gvisor", UserNamespaces: true}, opts: driver.Options{Node: "n1"}}
	d.images.agent = "registry/hutch/agent@sha256:x"
	p := d.pod("01abc", "registry/hutch/base@sha256:y", api.Limits{MemoryMB: 512, CPU: 2, DiskMB: 1024})

	s := p.Spec
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || s.EnableServiceLinks == nil || *s.EnableServiceLinks {
		t.Error("the Pod mounts a service-account token or gets service links")
	}
	if s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor" || s.HostUsers == nil || *s.HostUsers {
		t.Errorf("runtime class %v, hostUsers %v; want gvisor and false", s.RuntimeClassName, s.HostUsers)
	}
	if s.Hostname != "01abc" || s.RestartPolicy != corev1.RestartPolicyNever || p.Labels[labelSandbox] != "01abc" || p.Labels[labelNode] != "n1" {
		t.Errorf("hostname %q, restart %q, labels %v", s.Hostname, s.RestartPolicy, p.Labels)
	}
	for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s: %+v", c.Name, sc)
		}
	}
	if add := s.InitContainers[0].SecurityContext.Capabilities.Add; len(add) != 0 {
		t.Errorf("the init container keeps %v; want no capability", add)
	}
	if add := s.Containers[0].SecurityContext.Capabilities.Add; !slices.Equal(add, agentCaps) {
		t.Errorf("the sandbox's container keeps %v; want %v", add, agentCaps)
	}
	r := s.Containers[0].Resources
	if r.Limits.Memory().Value() != 512<<20 || r.Requests.Memory().Value() != 128<<20 ||
		r.Limits.Cpu().MilliValue() != 2000 || r.Requests.Cpu().MilliValue() != 200 {
		t.Errorf("resources %+v; want limits 512Mi and 2 CPUs, requests a quarter and a tenth", r)
	}
	if r.Limits.StorageEphemeral().Value() != 1024<<20 || r.Requests.StorageEphemeral().Value() != 0 {
		t.Errorf("ephemeral storage %+v; want the disk limit as its limit, and no request", r)
	}
	if !slices.ContainsFunc(s.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == agentDir && m.ReadOnly }) {
		t.Error("the agent's volume is not read-only in the sandbox's container")
	}
}

// TestResolveCwd: a relative cwd stays under the working directory.
func TestResolveCwd(t *testing.T) {
	for _, tc := range []struct{ workdir, cwd, want string }{
		{"/workspace", "", "/workspace"},
		{"/workspace", "a/b", "/workspace/a/b"},
		{"/workspace", "/srv", "/srv"},
		{"/", "srv", "/srv"},
		{"/workspace", "../../outside", ""},
	} {
		got, err := resolveCwd(tc.workdir, tc.cwd)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("resolveCwd(%q, %q) = %q, %v; want %q", tc.workdir, tc.cwd, got, err, tc.want)
		}
	}
}
