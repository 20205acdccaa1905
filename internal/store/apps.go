package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Apps is the persistent state of the apps layer: apps, their config and
// their tasks with their logs. Every method is tenant-scoped as the other
// parts' are, except AppByName, which the apps layer calls as the system
// to route a request to an app's host.
type Apps interface {
	// CreateApp stores a in the caller's tenant, setting a.TenantID, an ID
	// if empty and its times. A name used by any tenant is a conflict
	// (code "app_exists"): it is a host name.
	CreateApp(ctx context.Context, a *App) error
	// GetApp returns one of the caller's tenant's apps.
	GetApp(ctx context.Context, id string) (*App, error)
	// AppByName returns any tenant's app by name. System only: routing.
	AppByName(ctx context.Context, name string) (*App, error)
	// ListApps returns the caller's tenant's apps by name (every tenant's
	// for the system without a principal).
	ListApps(ctx context.Context) ([]App, error)
	// UpdateApp reads an app, lets fn change it and writes it back in one
	// write transaction. An error from fn aborts and is returned as is.
	// ID, TenantID, Name and CreatedAt cannot be changed; Generation grows
	// by one when Live, Dev or PreviousLive changed.
	UpdateApp(ctx context.Context, id string, fn func(*App) error) (*App, error)
	// DeleteApp deletes one of the caller's tenant's apps with its config,
	// tasks and events.
	DeleteApp(ctx context.Context, id string) error
	// DeleteAppsByTenant deletes every app of tenantID left, with its
	// config, tasks and events, and returns how many. System only: a
	// tenant's deletion, which deletes each app through the apps layer
	// first (its sandboxes with it); this erases whatever is left.
	DeleteAppsByTenant(ctx context.Context, tenantID string) (int, error)

	// PutAppConfig creates or replaces one config entry of an app of the
	// caller's tenant; at most api.MaxAppConfig entries
	// ("too_much_config").
	PutAppConfig(ctx context.Context, c *AppConfig) error
	// ListAppConfig returns an app's config by key, sealed values included.
	ListAppConfig(ctx context.Context, appID string) ([]AppConfig, error)
	// DeleteAppConfig deletes one entry ("config_not_found" when missing).
	DeleteAppConfig(ctx context.Context, appID, key string) error

	// CreateTask stores t, refused with "task_running" (a conflict) when
	// another task of the app is queued or running, checked in the same
	// write.
	CreateTask(ctx context.Context, t *api.Task) error
	// GetTask returns one task of an app of the caller's tenant.
	GetTask(ctx context.Context, appID, id string) (*api.Task, error)
	// ListTasks returns an app's tasks, newest first, at most limit.
	ListTasks(ctx context.Context, appID string, limit int) ([]api.Task, error)
	// UpdateTask reads a task, lets fn change it and writes it back.
	UpdateTask(ctx context.Context, appID, id string, fn func(*api.Task) error) (*api.Task, error)
	// ActiveTasks returns every tenant's queued and running tasks. System
	// only: recovery after a restart.
	ActiveTasks(ctx context.Context) ([]api.Task, error)
	// AppendTaskLog adds a chunk to a task's log and returns its number
	// (1, 2, …); the log is bounded by MaxTaskLogChunks.
	AppendTaskLog(ctx context.Context, taskID string, data []byte) (int64, error)
	// TaskLog returns the chunks of a task's log after seq, in order, at
	// most limit.
	TaskLog(ctx context.Context, taskID string, after int64, limit int) ([]LogChunk, error)
}

// MaxTaskLogChunks bounds one task's log; chunks past it are dropped and
// the log says so once.
const MaxTaskLogChunks = 20000

// App is an app's persisted record.
type App struct {
	ID       string
	TenantID string
	Name     string
	Preset   string
	Template string
	Public   bool
	State    string // api.AppCreating, api.AppReady, api.AppFailed
	Error    string
	// Live and Dev are the sandboxes the roles point at; PreviousLive what
	// Live pointed at before the last promotion.
	Live, Dev, PreviousLive string
	// Generation grows with every change of the pointers.
	Generation int64
	Limits     *api.Limits
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// AppConfig is one config entry of an app: Value for a plain one; a
// sensitive one only sealed (KeyID, Nonce, Ciphertext).
type AppConfig struct {
	AppID      string
	Key        string
	Value      string
	Sensitive  bool
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
	Access     string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// LogChunk is one numbered piece of a task's log.
type LogChunk struct {
	Seq  int64
	Data []byte
}

// CheckAppName validates an app's name: a DNS label of lowercase letters,
// digits and '-', starting with a letter (so it never reads as a
// preview's "<port>-<id>"), not ending with '-'.
func CheckAppName(name string) error {
	ok := name != "" && len(name) <= api.MaxAppName && 'a' <= name[0] && name[0] <= 'z' && name[len(name)-1] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-'
	}
	if !ok {
		return errdefs.Invalid("invalid_app_name",
			"an app's name is its host label: 1-%d characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'", api.MaxAppName)
	}
	return nil
}

// CheckConfigKey validates a config key: an environment variable's name.
func CheckConfigKey(key string) error {
	ok := key != "" && len(key) <= api.MaxConfigKey && !('0' <= key[0] && key[0] <= '9')
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	if !ok {
		return errdefs.Invalid("invalid_config_key",
			"a config key is an environment variable's name: 1-%d characters of A-Z, a-z, 0-9 and '_', not starting with a digit", api.MaxConfigKey)
	}
	return nil
}

// AppNotFound is the answer for an app that is missing or not the
// caller's.
func AppNotFound(id string) error {
	return errdefs.NotFound("app_not_found", "app %q not found", id)
}

// AppExists is the answer for a name already taken.
func AppExists(name string) error {
	return errdefs.Conflict("app_exists", "an app named %q already exists on this server; app names are host names", name)
}

// TaskNotFound is the answer for a task that is missing.
func TaskNotFound(id string) error {
	return errdefs.NotFound("task_not_found", "task %q not found", id)
}

// TaskRunning is the answer to a second task while one runs.
func TaskRunning(id string) error {
	return errdefs.Conflict("task_running", "task %s of this app is still queued or running; wait for it or cancel it (POST …/tasks/%s/cancel)", id, id)
}

// ConfigNotFound is the answer for a missing config key.
func ConfigNotFound(key string) error {
	return errdefs.NotFound("config_not_found", "config key %q not found", key)
}
