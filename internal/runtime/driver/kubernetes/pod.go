package kubernetes

import (
	"strconv"

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

// objectName is the Pod's and the Secret's name for sandbox id (ids are
// lower-case ULIDs, valid in a DNS label).
func objectName(id string) string { return "hutch-" + id }

// nodeSelector selects what node made.
func nodeSelector(node string) string {
	return labels.Set{labelManaged: managedBy, labelNode: node}.String()
}

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

// pod is sandbox id's Pod: image with the agent as its entrypoint, as
// uid, hardened (no service-account token, no capabilities, no privilege
// escalation, the runtime's default seccomp profile), with the limits as
// the container's resources.
func (d *Driver) pod(id, image string, uid int64, limits api.Limits) *corev1.Pod {
	f := false
	grace := int64(0)
	sc := &corev1.SecurityContext{
		RunAsUser:                &uid,
		RunAsGroup:               &uid,
		RunAsNonRoot:             ptr(uid != 0),
		AllowPrivilegeEscalation: &f,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	p := &corev1.Pod{
		ObjectMeta: d.meta(id),
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &f,
			EnableServiceLinks:            &f,
			RestartPolicy:                 corev1.RestartPolicyNever,
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
				SecurityContext: sc,
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
				SecurityContext: sc,
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

// resources are the container's limits, each requested as much as it is
// limited, so the scheduler places the Pod where it fits.
func resources(l api.Limits) corev1.ResourceRequirements {
	r := corev1.ResourceList{}
	if l.MemoryMB > 0 {
		r[corev1.ResourceMemory] = resource.MustParse(strconv.Itoa(l.MemoryMB) + "Mi")
	}
	if l.CPU > 0 {
		r[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(l.CPU*1000), resource.DecimalSI)
	}
	if len(r) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: r, Requests: r.DeepCopy()}
}

func ptr[T any](v T) *T { return &v }

// handleState is the driver's part of a Handle.
type handleState struct {
	Pod string `json:"pod"`
	UID string `json:"uid"`
}

var _ driver.Driver = (*Driver)(nil)
