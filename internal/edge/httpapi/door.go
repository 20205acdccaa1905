package httpapi

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/router"
)

// Sandboxes is what the API asks of the sandbox service, the only door to
// a sandbox (internal/control/sandbox.Service): the API never holds an agent
// client or a driver.
type Sandboxes interface {
	Create(ctx context.Context, req api.CreateSandboxRequest) (api.Sandbox, error)
	Get(ctx context.Context, id string) (api.Sandbox, error)
	List(ctx context.Context, opts sandbox.ListOptions) (api.SandboxList, error)
	Stop(ctx context.Context, id string) (api.Sandbox, error)
	Start(ctx context.Context, id string) (api.Sandbox, error)
	Pause(ctx context.Context, id string) (api.Sandbox, error)
	Resume(ctx context.Context, id string) (api.Sandbox, error)
	Keepalive(ctx context.Context, id string, req api.KeepaliveRequest) (api.Sandbox, error)
	Destroy(ctx context.Context, id string) error

	Exec(ctx context.Context, id string, req api.ExecRequest) (api.ExecResult, error)
	ExecStream(ctx context.Context, id string, req api.ExecRequest) (sandbox.Stream[api.ExecEvent], error)

	ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error)
	WriteFile(ctx context.Context, id, path, mode string, parents bool, body io.Reader) (api.FileInfo, error)
	RemoveFile(ctx context.Context, id, path string, recursive bool) error
	ListFiles(ctx context.Context, id, path string) (api.FileList, error)
	StatFile(ctx context.Context, id, path string) (api.FileInfo, error)
	Mkdir(ctx context.Context, id string, req api.MkdirRequest) (api.FileInfo, error)
	Move(ctx context.Context, id string, req api.MoveRequest) (api.FileInfo, error)
	TarDownload(ctx context.Context, id, path string) (io.ReadCloser, error)
	TarUpload(ctx context.Context, id, path string, body io.Reader) (api.TarResult, error)
	Watch(ctx context.Context, id, path string, recursive bool) (sandbox.Stream[api.WatchEvent], error)

	StartProcess(ctx context.Context, id string, req api.ProcessRequest) (api.Process, error)
	ListProcesses(ctx context.Context, id string) (api.ProcessList, error)
	GetProcess(ctx context.Context, id string, pid int) (api.Process, error)
	WriteStdin(ctx context.Context, id string, pid int, body io.Reader, closeAfter bool) (api.Process, error)
	StdinStream(ctx context.Context, id string, pid int) (*sandbox.StdinStream, error)
	SignalProcess(ctx context.Context, id string, pid int, req api.SignalRequest) (api.Process, error)
	ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) (api.Process, error)
	WaitProcess(ctx context.Context, id string, pid int, timeout time.Duration) (api.Process, error)
	ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (sandbox.Stream[api.OutputEvent], error)

	SetTimeout(ctx context.Context, id string, req api.TimeoutRequest) (api.Sandbox, error)

	Snapshot(ctx context.Context, id string, req api.CreateSnapshotRequest) (api.Snapshot, error)
	GetSnapshot(ctx context.Context, id string) (api.Snapshot, error)
	ListSnapshots(ctx context.Context, sandbox string) ([]api.Snapshot, error)
	DeleteSnapshot(ctx context.Context, id string) error
	Restore(ctx context.Context, id string, req api.RestoreRequest) (api.Sandbox, error)
	Fork(ctx context.Context, id string, req api.ForkRequest) (api.ForkResult, error)

	Network(ctx context.Context, id string) (api.Network, error)
	SetNetwork(ctx context.Context, id string, p api.NetworkPolicy) (api.Network, error)
	Metrics(ctx context.Context, id string) (api.SandboxMetrics, error)

	// Info is the server's side of GET /v1/info: its drivers and limits.
	Info() api.Info

	// Quotas and SetQuotas read and set a tenant's quotas with its usage.
	Quotas(ctx context.Context, tenantID string) (api.TenantQuotas, error)
	SetQuotas(ctx context.Context, tenantID string, q api.Quotas) (api.TenantQuotas, error)
}

// Previews is what the API asks of the preview router
// (internal/edge/router.Router): signed URLs, links, and forgetting what it
// cached of a sandbox's ports when their setting changes.
type Previews interface {
	SignedURL(r *http.Request, t router.Target, ttl time.Duration) (string, time.Time, error)
	URL(r *http.Request, t router.Target) string
	Forget(sandboxID string)
}

var (
	_ Sandboxes = (*sandbox.Service)(nil)
	_ Previews  = (*router.Router)(nil)
)
