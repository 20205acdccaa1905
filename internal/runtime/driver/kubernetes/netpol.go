package kubernetes

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// networkPolicy is sandbox id's NetworkPolicy: in, only the agent's port
// (the agent authenticates every request); out, nothing. The sandbox's
// egress leaves by its agent, on streams the control plane opens to it
// (egress.go), so it needs no route of its own, not even DNS (the proxy
// resolves). It holds only where the cluster's network plugin enforces
// NetworkPolicies (probeNetworkPolicy).
func (d *Driver) networkPolicy(id string) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	agent := intstr.FromInt32(agentPort)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: d.meta(id),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelSandbox: id}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &agent}},
			}},
		},
	}
}

// probeTimeout bounds the probe; probeWait is how long its connection
// may take before the probe calls it dropped.
const (
	probeTimeout = 2 * time.Minute
	probeWait    = 3
)

// Whether the cluster enforces NetworkPolicies, as the probe found.
const (
	netpolUnknown = iota
	netpolEnforced
	netpolIgnored
)

// probeNetworkPolicy finds whether the cluster's network plugin enforces
// NetworkPolicies: a sandbox of its own (labelled a probe, which a sweep
// leaves alone), under the NetworkPolicy every sandbox gets, connects to
// the kubelet's port on its node's address (busybox's nc), a private
// one its policy shuts out. A connection made says they are not enforced; one that
// times out or is refused, that they are.
func (d *Driver) probeNetworkPolicy(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sp := driver.Spec{SandboxID: ids.New(), Token: ids.Token(32), MaxFileBytes: 1 << 20, Limits: api.Limits{CPU: 0.1}}
	h, err := d.create(ctx, sp, true)
	if err != nil {
		return netpolUnknown, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
		defer cancel()
		if err := d.remove(dctx, sp.SandboxID, objectName(sp.SandboxID)); err != nil {
			d.log.Warn("remove the NetworkPolicy probe", "err", err)
		}
	}()
	pod := d.pods.get(objectName(sp.SandboxID))
	if pod == nil || pod.Status.HostIP == "" {
		return netpolUnknown, fmt.Errorf("the probe's Pod has no node address")
	}
	c := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token)
	defer c.Close()
	addr := net.JoinHostPort(pod.Status.HostIP, "10250")
	res, err := run(ctx, c, "/bin/sh", "-c", fmt.Sprintf("nc -w %d %s < /dev/null", probeWait, strings.ReplaceAll(addr, ":", " ")))
	if err != nil {
		return netpolUnknown, err
	}
	out := strings.ToLower(res.Stderr)
	switch {
	case res.ExitCode == 0:
		return netpolIgnored, nil
	case strings.Contains(out, "timed out") || strings.Contains(out, "timeout") || strings.Contains(out, "refused") || strings.Contains(out, "unreachable"):
		return netpolEnforced, nil
	}
	return netpolUnknown, fmt.Errorf("the probe's connection to %s: exit %d, %q", addr, res.ExitCode, res.Stderr)
}

// run runs cmd to its end through c and returns its result.
func run(ctx context.Context, c *agentclient.Client, cmd ...string) (api.ExecResult, error) {
	st, err := c.Exec(ctx, api.ExecRequest{Cmd: cmd})
	if err != nil {
		return api.ExecResult{}, err
	}
	defer st.Close()
	return st.Collect()
}
