package sandbox

import (
	"context"
	"io"
	"time"

	"github.com/hutchdev/hutch/api"
)

// The roles of the service: what the parts in front of it (the API, the
// E2B layer, the preview router) ask of a sandbox, each a small interface
// declared once, here. A part embeds the roles it plays in an interface
// of its own, and the Service plays every role (the guards below). A call
// acts in the tenant of ctx's principal, where another tenant's sandbox
// is not found; Previews alone reads as the system.

// Lifecycle makes sandboxes, shows them and moves them through their
// states (state.go).
type Lifecycle interface {
	Create(ctx context.Context, req api.CreateSandboxRequest) (api.Sandbox, error)
	Get(ctx context.Context, id string) (api.Sandbox, error)
	Check(ctx context.Context, id string) error
	List(ctx context.Context, opts ListOptions) (api.SandboxList, error)
	Start(ctx context.Context, id string) (api.Sandbox, error)
	Stop(ctx context.Context, id string) (api.Sandbox, error)
	Pause(ctx context.Context, id string) (api.Sandbox, error)
	Resume(ctx context.Context, id string) (api.Sandbox, error)
	Keepalive(ctx context.Context, id string, req api.KeepaliveRequest) (api.Sandbox, error)
	SetTimeout(ctx context.Context, id string, req api.TimeoutRequest) (api.Sandbox, error)
	Destroy(ctx context.Context, id string) error
}

// Commands runs commands in a running sandbox, to their end or streamed.
type Commands interface {
	Exec(ctx context.Context, id string, req api.ExecRequest) (api.ExecResult, error)
	ExecStream(ctx context.Context, id string, req api.ExecRequest) (Stream[api.ExecEvent], error)
}

// Files reads, writes and watches a running sandbox's files.
type Files interface {
	ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error)
	WriteFile(ctx context.Context, id, path, mode string, parents bool, body io.Reader) (api.FileInfo, error)
	RemoveFile(ctx context.Context, id, path string, recursive bool) error
	ListFiles(ctx context.Context, id, path string) (api.FileList, error)
	StatFile(ctx context.Context, id, path string) (api.FileInfo, error)
	Mkdir(ctx context.Context, id string, req api.MkdirRequest) (api.FileInfo, error)
	Move(ctx context.Context, id string, req api.MoveRequest) (api.FileInfo, error)
	TarDownload(ctx context.Context, id, path string) (io.ReadCloser, error)
	TarUpload(ctx context.Context, id, path string, body io.Reader) (api.TarResult, error)
	Watch(ctx context.Context, id, path string, recursive bool) (Stream[api.WatchEvent], error)
}

// Processes starts background processes in a running sandbox and drives
// them: their input, signals, terminal size, exit and output.
type Processes interface {
	StartProcess(ctx context.Context, id string, req api.ProcessRequest) (api.Process, error)
	ListProcesses(ctx context.Context, id string) (api.ProcessList, error)
	GetProcess(ctx context.Context, id string, pid int) (api.Process, error)
	WriteStdin(ctx context.Context, id string, pid int, body io.Reader, closeAfter bool) (api.Process, error)
	StdinStream(ctx context.Context, id string, pid int) (*StdinStream, error)
	SignalProcess(ctx context.Context, id string, pid int, req api.SignalRequest) (api.Process, error)
	ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) (api.Process, error)
	WaitProcess(ctx context.Context, id string, pid int, timeout time.Duration) (api.Process, error)
	ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (Stream[api.OutputEvent], error)
}

// Snapshots captures a sandbox's files, and starts sandboxes from them:
// restored in place or forked.
type Snapshots interface {
	Snapshot(ctx context.Context, id string, req api.CreateSnapshotRequest) (api.Snapshot, error)
	GetSnapshot(ctx context.Context, id string) (api.Snapshot, error)
	ListSnapshots(ctx context.Context, sandbox string) ([]api.Snapshot, error)
	DeleteSnapshot(ctx context.Context, id string) error
	Restore(ctx context.Context, id string, req api.RestoreRequest) (api.Sandbox, error)
	Fork(ctx context.Context, id string, req api.ForkRequest) (api.ForkResult, error)
	// SnapshotNode is the node whose disk keeps a snapshot's files, where
	// a sandbox starts from it; "" when any node can.
	SnapshotNode(ctx context.Context, id string) (string, error)
}

// Network shows and changes a sandbox's egress policy.
type Network interface {
	Network(ctx context.Context, id string) (api.Network, error)
	SetNetwork(ctx context.Context, id string, p api.NetworkPolicy) (api.Network, error)
}

// Meter measures what a sandbox uses (metrics.go).
type Meter interface {
	Metrics(ctx context.Context, id string) (api.SandboxMetrics, error)
}

// Limits are what bounds sandboxes: the server's drivers and limits (the
// tenants' quotas are internal/control/quota's).
type Limits interface {
	// Info is the server's side of GET /v1/info: its drivers and limits.
	Info() api.Info
}

// Ports are a sandbox's port settings for its previews, public or
// private (previews.go), and the ports listening in it (network.go).
type Ports interface {
	SetPort(ctx context.Context, id string, port int, public bool) (PortSetting, error)
	Ports(ctx context.Context, id string) ([]PortSetting, error)
	ListeningPorts(ctx context.Context, id string) ([]Listener, error)
}

// Locate says which node runs a sandbox, for the API's one forwarding
// decision (locate.go).
type Locate interface {
	NodeOf(ctx context.Context, id string) (string, error)
}

// Previews resolves a request to a sandbox's port for the preview router
// (previews.go).
type Previews interface {
	Preview(ctx context.Context, id string, port int) (Preview, error)
}

var (
	_ Lifecycle = (*Service)(nil)
	_ Commands  = (*Service)(nil)
	_ Files     = (*Service)(nil)
	_ Processes = (*Service)(nil)
	_ Snapshots = (*Service)(nil)
	_ Network   = (*Service)(nil)
	_ Meter     = (*Service)(nil)
	_ Limits    = (*Service)(nil)
	_ Ports     = (*Service)(nil)
	_ Previews  = (*Service)(nil)
	_ Locate    = (*Service)(nil)
)
