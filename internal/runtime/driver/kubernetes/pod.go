package kubernetes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// The labels on everything the driver makes.
const (
	labelManaged = "app.kubernetes.io/managed-by"
	managedBy    = "hutch"
	labelSandbox = "hutch.dev/sandbox"
	labelNode    = "hutch.dev/node"
	// labelProbe marks the NetworkPolicy probe's sandbox (netpol.go).
	labelProbe = "hutch.dev/probe"
)

// agentPort is where the agent listens in each Pod.
const agentPort = 49982

// The volume the agent is copied into, and where each container sees it.
const (
	agentVolume = "hutch-agent"
	agentDir    = "/.hutch"
	agentBinary = agentDir + "/hutch-agent"
	envelopeKey = "envelope"
)

var everything = labels.Everything()

// objectPrefix begins the name of every object of a sandbox.
const objectPrefix = "hutch-"

// objectName is the name of sandbox id's Pod, Secret and NetworkPolicy
// (ids are lower-case ULIDs, valid in a DNS label).
func objectName(id string) string { return objectPrefix + id }

// sandboxOf is the sandbox id of an object named name (objectName).
func sandboxOf(name string) string { return strings.TrimPrefix(name, objectPrefix) }

// managed selects everything the driver makes in its namespace, any
// node's: a Pod runs on whatever node made it, so every node sees every
// sandbox (a lost node's are taken over: Adopt), and a sweep asks the
// store, which every node shares, whether any node's sandbox claims it.
var managed = labels.Set{labelManaged: managedBy}.String()

// meta is the metadata of sandbox id's objects.
func (d *Driver) meta(id string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      objectName(id),
		Namespace: d.cfg.Namespace,
		Labels:    map[string]string{labelManaged: managedBy, labelSandbox: id, labelNode: d.opts.Node},
	}
}

// secret holds the agent's envelope (framed, in base64), its token in it.
func (d *Driver) secret(id string, envelope []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: d.meta(id),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{envelopeKey: envelope},
	}
}

// agentCaps are the only capabilities a sandbox's container keeps, for
// its agent, which runs as root: to start each command as the sandbox's
// user (SETUID, SETGID), or as root when a call asks for it, and to
// signal, own and reach that user's processes and files (KILL, CHOWN,
// FOWNER, DAC_OVERRIDE). A command of the user has none of them (the
// kernel clears them as it leaves uid 0); one run as root has these, a
// subset of a Docker container's default.
var agentCaps = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}

// pod is sandbox id's Pod: image with the agent as its entrypoint,
// hardened (no service-account token, no capability but agentCaps, none
// at all for the init container, no privilege escalation, the runtime's
// default seccomp profile), with the limits as the container's
// resources.
func (d *Driver) pod(id, image string, limits api.Limits) *corev1.Pod {
	f := false
	grace := int64(0)
	root := int64(0)
	hardened := func(add ...corev1.Capability) *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser:                &root,
			RunAsGroup:               &root,
			AllowPrivilegeEscalation: &f,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: add},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	p := &corev1.Pod{
		ObjectMeta: d.meta(id),
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &f,
			EnableServiceLinks:           &f,
			RestartPolicy:                corev1.RestartPolicyNever,
			// A sandbox's hostname is its id, whatever the driver.
			Hostname:                      id,
			TerminationGracePeriodSeconds: &grace,
			Volumes: []corev1.Volume{{
				Name:         agentVolume,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			}},
			InitContainers: []corev1.Container{{
				Name:            "hutch-agent",
				Image:           d.images.agent,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/hutch-agent", "-install", agentBinary},
				VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}},
				SecurityContext: hardened(),
			}},
			Containers: []corev1.Container{{
				Name:            "sandbox",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{agentBinary, "-envelope-env"},
				Env: []corev1.EnvVar{{
					Name: "HUTCH_AGENT_ENVELOPE",
					ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: objectName(id)},
						Key:                  envelopeKey,
					}},
				}},
				Ports:           []corev1.ContainerPort{{Name: "hutch-agent", ContainerPort: agentPort, Protocol: corev1.ProtocolTCP}},
				VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir, ReadOnly: true}},
				SecurityContext: hardened(agentCaps...),
				Resources:       resources(limits),
			}},
		},
	}
	if d.cfg.RuntimeClass != "" {
		p.Spec.RuntimeClassName = &d.cfg.RuntimeClass
	}
	if d.cfg.UserNamespaces {
		p.Spec.HostUsers = &f
	}
	return p
}

// The share of a limit a Pod requests. A sandbox mostly waits on its
// user, so requesting its whole CPU limit would leave a node's cores
// idle and its sandboxes few (a 2-core node would place two at the
// default 1 CPU); memory cannot be taken back once used, so more of it is
// requested, and a node under pressure evicts first the Pods past their
// requests.
const (
	cpuRequestShare    = 0.1
	memoryRequestShare = 0.25
)

// resources are the container's limits, and the share of each that the
// scheduler places the Pod by.
func resources(l api.Limits) corev1.ResourceRequirements {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	if l.MemoryMB > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(l.MemoryMB)<<20, resource.BinarySI)
		requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(float64(int64(l.MemoryMB)<<20)*memoryRequestShare), resource.BinarySI)
	}
	if l.CPU > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(l.CPU*1000), resource.DecimalSI)
		requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(int64(l.CPU*1000*cpuRequestShare), 1), resource.DecimalSI)
	}
	// The disk limit is the container's ephemeral storage (its writable
	// layer, its logs): the kubelet evicts a Pod past it, which fails the
	// sandbox. Writes do not fail and the files are not kept, as hutch's
	// disk limit promises elsewhere, so the limit is still reported
	// unenforced (Capabilities). Nothing is requested: most sandboxes
	// write little.
	if l.DiskMB > 0 {
		limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(l.DiskMB)<<20, resource.BinarySI)
	}
	if len(limits) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: limits, Requests: requests}
}

// handleState is the driver's part of a Handle: the sandbox's Pod, the
// image it runs (its template's, a snapshot's, or what its last stop
// kept), and its limits, for the next Pod of the sandbox.
type handleState struct {
	Pod    string     `json:"pod"`
	UID    string     `json:"uid"`
	Image  string     `json:"image,omitempty"`
	Limits api.Limits `json:"limits"`
	// Sandbox is the sandbox's id when its Pod is not named after it (a
	// warm Pod of the pool).
	Sandbox string `json:"sandbox,omitempty"`
}

// sandbox is the id of the handle's sandbox, whose Secret and
// NetworkPolicy are named after it.
func (st handleState) sandbox() string {
	if st.Sandbox != "" {
		return st.Sandbox
	}
	return sandboxOf(st.Pod)
}

var _ driver.Driver = (*Driver)(nil)
