package e2b

import (
	"math"
	"time"

	"github.com/hutchdev/hutch/api"
)

// newSandbox is the body of POST /v2/sandboxes (E2B's NewSandboxV2).
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int              `json:"timeout,omitempty"` // seconds
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             *networkConfig    `json:"network,omitempty"`
	AutoPause           *bool             `json:"autoPause,omitempty"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory,omitempty"`
	AutoResume          *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume,omitempty"`
	Secure       *bool            `json:"secure,omitempty"`
	MCP          map[string]any   `json:"mcp,omitempty"`
	IAM          map[string]any   `json:"iam,omitempty"`
	VolumeMounts []map[string]any `json:"volumeMounts,omitempty"`
}

// networkConfig is E2B's SandboxNetworkConfig, at create and in PUT
// /sandboxes/{id}/network.
type networkConfig struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic,omitempty"`
	MaskRequestHost    *string  `json:"maskRequestHost,omitempty"`
	Rules              any      `json:"rules,omitempty"`
	EgressProxy        any      `json:"egressProxy,omitempty"`
	HTTPSPorts         any      `json:"httpsPorts,omitempty"`
}

// sandboxRef is E2B's Sandbox: what create, connect and fork return.
type sandboxRef struct {
	SandboxID       string `json:"sandboxID"`
	TemplateID      string `json:"templateID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	Domain          string `json:"domain,omitempty"`
}

// listedSandbox is E2B's ListedSandbox; sandboxDetail adds what GET
// /sandboxes/{id} says besides.
type listedSandbox struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	Metadata    map[string]string `json:"metadata"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
}

type sandboxDetail struct {
	listedSandbox
	EnvdAccessToken     string        `json:"envdAccessToken,omitempty"`
	Domain              string        `json:"domain,omitempty"`
	AllowInternetAccess bool          `json:"allowInternetAccess"`
	Network             networkConfig `json:"network"`
	Lifecycle           lifecycle     `json:"lifecycle"`
}

type lifecycle struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// sandboxMetric is one of E2B's SandboxMetric.
type sandboxMetric struct {
	Timestamp  time.Time `json:"timestamp"`
	CPUCount   int       `json:"cpuCount"`
	CPUUsedPct float64   `json:"cpuUsedPct"`
	MemUsed    int64     `json:"memUsed"`
	MemTotal   int64     `json:"memTotal"`
	MemCache   int64     `json:"memCache"`
	DiskUsed   int64     `json:"diskUsed"`
	DiskTotal  int64     `json:"diskTotal"`
}

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

// forkResult is one of E2B's SandboxForkResult.
type forkResult struct {
	Sandbox *sandboxRef `json:"sandbox,omitempty"`
	Error   *restError  `json:"error,omitempty"`
}

// templateOf is the E2B template id a hutch sandbox shows: "base" for the
// server's default.
func templateOf(sb api.Sandbox) string {
	if sb.Template == "" {
		return "base"
	}
	return sb.Template
}

// stateOf is E2B's state of a sandbox: "running" or "paused". A stopped
// hutch sandbox (its files kept, its processes gone) is E2B's paused
// sandbox without its memory; connect starts it again.
func stateOf(sb api.Sandbox) string {
	if sb.State == api.StateRunning {
		return "running"
	}
	return "paused"
}

// live reports whether a sandbox is one E2B would list: running, paused
// or stopped, not on its way out.
func live(sb api.Sandbox) bool {
	switch sb.State {
	case api.StateRunning, api.StatePaused, api.StateStopped:
		return true
	}
	return false
}

func (h *Handler) listed(sb api.Sandbox) listedSandbox {
	end := sb.CreatedAt.Add(time.Duration(sb.TimeoutS) * time.Second)
	if sb.ExpiresAt != nil {
		end = *sb.ExpiresAt
	}
	meta := sb.Labels
	if meta == nil {
		meta = map[string]string{}
	}
	return listedSandbox{
		SandboxID:   sb.ID,
		TemplateID:  templateOf(sb),
		ClientID:    clientID(sb),
		StartedAt:   sb.CreatedAt,
		EndAt:       end,
		CPUCount:    cpuCount(sb),
		MemoryMB:    sb.Limits.MemoryMB,
		DiskSizeMB:  sb.Limits.DiskMB,
		Metadata:    meta,
		State:       stateOf(sb),
		EnvdVersion: EnvdVersion,
	}
}

func (h *Handler) detail(sb api.Sandbox, keyID string) sandboxDetail {
	d := sandboxDetail{
		listedSandbox:       h.listed(sb),
		EnvdAccessToken:     h.tokens.sign(keyID, sb.ID),
		Domain:              h.cfg.Domain,
		AllowInternetAccess: sb.Network.Egress != api.EgressNone,
		Lifecycle:           lifecycle{OnTimeout: "kill", AutoResume: false},
	}
	if sb.OnExpiry == api.OnExpiryPause || sb.OnExpiry == api.OnExpiryStop {
		d.Lifecycle.OnTimeout = "pause"
	}
	switch sb.Network.Egress {
	case api.EgressAllowlist:
		d.Network.AllowOut = sb.Network.Allow
		d.Network.DenyOut = []string{allTraffic}
	case api.EgressNone:
		d.Network.DenyOut = []string{allTraffic}
	}
	return d
}

func (h *Handler) ref(sb api.Sandbox, keyID string) sandboxRef {
	return sandboxRef{
		SandboxID:       sb.ID,
		TemplateID:      templateOf(sb),
		ClientID:        clientID(sb),
		EnvdVersion:     EnvdVersion,
		EnvdAccessToken: h.tokens.sign(keyID, sb.ID),
		Domain:          h.cfg.Domain,
	}
}

// cpuCount is E2B's whole number of CPUs of a sandbox: its CPU limit
// rounded up, at least 1 (none set).
func cpuCount(sb api.Sandbox) int {
	return max(1, int(math.Ceil(sb.Limits.CPU)))
}

// clientID is the node that owns the sandbox: E2B's client (its host).
func clientID(sb api.Sandbox) string {
	if sb.Node == "" {
		return "hutch"
	}
	return sb.Node
}

// allTraffic is E2B's CIDR for "everything" in denyOut.
const allTraffic = "0.0.0.0/0"
