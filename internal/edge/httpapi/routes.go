package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// route is one API operation. The table below is the server's whole
// surface; openapi_test.go holds it, query parameters included, to
// api/openapi.yaml.
type route struct {
	method, pattern string
	handler         http.HandlerFunc
	public          bool     // no API key needed
	query           []string // the query parameters it takes; any other is refused
	// role is the least role whose keys may call it: api.RoleReader for
	// what only reads (GETs; not the terminals, which run commands),
	// api.RoleAdmin for what only admins may do; "" is api.RoleMember, so
	// a new route is closed to readers until it says otherwise.
	role string
	// long marks a stream, a transfer or a command that may outlast the
	// server's request timeout: its read and write deadlines are lifted
	// (idle connections and headers are still bounded), and its latency
	// is measured to its status line (telemetry.Route).
	long bool
	// anyNode marks a route of one sandbox (/v1/sandboxes/{id}...) or
	// app (/v1/apps/{id}...) that any node answers from the store alone;
	// every other such route is served by the node that runs the sandbox
	// (the app's), forwarded there from any other (forward.go).
	anyNode bool
}

// withService runs h with the service get returns, or answers with
// get's error (a part this server runs without: 503).
func withService[S any](a *API, get func() (S, error), h func(http.ResponseWriter, *http.Request, S)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc, err := get()
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		h(w, r, svc)
	}
}

func (a *API) routes() []route {
	return []route{
		{method: "GET", pattern: "/healthz", handler: a.healthz, public: true},
		{method: "GET", pattern: "/v1/info", handler: a.info, role: api.RoleReader},
		{method: "GET", pattern: "/metrics", handler: a.metrics, role: api.RoleAdmin},
		{method: "GET", pattern: "/v1/settings", handler: withService(a, a.settings, a.getSettings), role: api.RoleAdmin},
		{method: "PATCH", pattern: "/v1/settings", handler: withService(a, a.settings, a.patchSettings), role: api.RoleAdmin},
		{method: "GET", pattern: "/v1/nodes", handler: withService(a, a.nodes, a.listNodes), role: api.RoleAdmin},
		{method: "GET", pattern: "/v1/nodes/{name}", handler: withService(a, a.nodes, a.getNode), role: api.RoleAdmin},
		{method: "DELETE", pattern: "/v1/nodes/{name}", handler: withService(a, a.nodes, a.removeNode), role: api.RoleAdmin},
		{method: "POST", pattern: "/v1/nodes/{name}/drain", handler: withService(a, a.nodes, a.drainNode), role: api.RoleAdmin},
		{method: "POST", pattern: "/v1/nodes/{name}/activate", handler: withService(a, a.nodes, a.activateNode), role: api.RoleAdmin},

		{method: "POST", pattern: "/v1/tenants", handler: a.createTenant, role: api.RoleAdmin},
		{method: "GET", pattern: "/v1/tenants/{id}", handler: a.getTenant, role: api.RoleReader},
		{method: "DELETE", pattern: "/v1/tenants/{id}", handler: a.deleteTenant, role: api.RoleAdmin},
		{method: "POST", pattern: "/v1/tenants/{id}/suspend", handler: a.suspendTenant, role: api.RoleAdmin, long: true},
		{method: "POST", pattern: "/v1/tenants/{id}/resume", handler: a.resumeTenant, role: api.RoleAdmin},
		{method: "GET", pattern: "/v1/tenants/{id}/quotas", handler: a.getQuotas, role: api.RoleReader},
		{method: "PUT", pattern: "/v1/tenants/{id}/quotas", handler: a.setQuotas, role: api.RoleAdmin},
		{method: "POST", pattern: "/v1/keys", handler: a.createKey},
		{method: "GET", pattern: "/v1/keys", handler: a.listKeys, role: api.RoleReader},
		{method: "DELETE", pattern: "/v1/keys/{id}", handler: a.deleteKey, query: []string{"cascade"}},
		{method: "POST", pattern: "/v1/secrets", handler: withService(a, a.secrets, a.createSecret)},
		{method: "GET", pattern: "/v1/secrets", handler: withService(a, a.secrets, a.listSecrets), role: api.RoleReader},
		{method: "GET", pattern: "/v1/secrets/{name}", handler: withService(a, a.secrets, a.getSecret), role: api.RoleReader},
		{method: "PUT", pattern: "/v1/secrets/{name}", handler: withService(a, a.secrets, a.replaceSecret)},
		{method: "DELETE", pattern: "/v1/secrets/{name}", handler: withService(a, a.secrets, a.deleteSecret)},
		{method: "POST", pattern: "/v1/volumes", handler: withService(a, a.volumes, a.createVolume)},
		{method: "GET", pattern: "/v1/volumes", handler: withService(a, a.volumes, a.listVolumes), role: api.RoleReader},
		{method: "GET", pattern: "/v1/volumes/{name}", handler: withService(a, a.volumes, a.getVolume), role: api.RoleReader},
		{method: "DELETE", pattern: "/v1/volumes/{name}", handler: withService(a, a.volumes, a.deleteVolume)},
		{method: "POST", pattern: "/v1/templates", handler: withService(a, a.templates, a.createTemplate), query: []string{"name"}, long: true},
		{method: "GET", pattern: "/v1/templates", handler: withService(a, a.templates, a.listTemplates), role: api.RoleReader},
		{method: "GET", pattern: "/v1/templates/{name}", handler: withService(a, a.templates, a.getTemplate), role: api.RoleReader},
		{method: "DELETE", pattern: "/v1/templates/{name}", handler: withService(a, a.templates, a.deleteTemplate)},

		{method: "GET", pattern: "/v1/presets", handler: withService(a, a.apps, a.listPresets), role: api.RoleReader},
		{method: "POST", pattern: "/v1/apps", handler: withService(a, a.apps, a.createApp)},
		{method: "GET", pattern: "/v1/apps", handler: withService(a, a.apps, a.listApps), role: api.RoleReader},
		{method: "GET", pattern: "/v1/apps/{id}", handler: withService(a, a.apps, a.getApp), role: api.RoleReader, anyNode: true},
		{method: "PATCH", pattern: "/v1/apps/{id}", handler: withService(a, a.apps, a.patchApp)},
		{method: "DELETE", pattern: "/v1/apps/{id}", handler: withService(a, a.apps, a.deleteApp), long: true},
		{method: "POST", pattern: "/v1/apps/{id}/promote", handler: withService(a, a.apps, a.promoteApp), long: true},
		{method: "POST", pattern: "/v1/apps/{id}/rollback", handler: withService(a, a.apps, a.rollbackApp)},
		{method: "POST", pattern: "/v1/apps/{id}/undo", handler: withService(a, a.apps, a.undoApp), long: true},
		{method: "POST", pattern: "/v1/apps/{id}/checkpoints", handler: withService(a, a.apps, a.createCheckpoint), long: true},
		{method: "GET", pattern: "/v1/apps/{id}/checkpoints", handler: withService(a, a.apps, a.listCheckpoints), role: api.RoleReader},
		{method: "POST", pattern: "/v1/apps/{id}/tasks", handler: withService(a, a.apps, a.createTask)},
		{method: "GET", pattern: "/v1/apps/{id}/tasks", handler: withService(a, a.apps, a.listTasks), query: []string{"limit"}, role: api.RoleReader},
		{method: "GET", pattern: "/v1/apps/{id}/tasks/{task}", handler: withService(a, a.apps, a.getTask), role: api.RoleReader},
		{method: "POST", pattern: "/v1/apps/{id}/tasks/{task}/cancel", handler: withService(a, a.apps, a.cancelTask)},
		{method: "GET", pattern: "/v1/apps/{id}/tasks/{task}/log", handler: withService(a, a.apps, a.taskLog), query: []string{"after"}, long: true, role: api.RoleReader},
		{method: "GET", pattern: "/v1/apps/{id}/processes", handler: withService(a, a.apps, a.appProcesses), query: []string{"role"}, role: api.RoleReader},
		{method: "GET", pattern: "/v1/apps/{id}/processes/{name}/logs", handler: withService(a, a.apps, a.appLogs), query: []string{"role", "tail", "follow"}, long: true, role: api.RoleReader},
		{method: "GET", pattern: "/v1/apps/{id}/config", handler: withService(a, a.apps, a.listConfig), role: api.RoleReader},
		{method: "POST", pattern: "/v1/apps/{id}/config", handler: withService(a, a.apps, a.createConfig)},
		{method: "PATCH", pattern: "/v1/apps/{id}/config/{key}", handler: withService(a, a.apps, a.patchConfig)},
		{method: "DELETE", pattern: "/v1/apps/{id}/config/{key}", handler: withService(a, a.apps, a.deleteConfig)},
		{method: "GET", pattern: "/v1/apps/{id}/events", handler: withService(a, a.apps, a.listAppEvents), query: []string{"after", "type", "limit"}, long: true, role: api.RoleReader},

		// Long: the first create of a template on a node of a fleet waits
		// for its layers from another node (--template-fetch-timeout).
		{method: "POST", pattern: "/v1/sandboxes", handler: a.createSandbox, long: true},
		{method: "POST", pattern: "/v1/sandboxes/{id}/timeout", handler: a.setTimeout},
		{method: "POST", pattern: "/v1/sandboxes/{id}/snapshots", handler: a.createSnapshot, long: true},
		{method: "GET", pattern: "/v1/sandboxes/{id}/snapshots", handler: a.listSandboxSnapshots, role: api.RoleReader, anyNode: true},
		{method: "GET", pattern: "/v1/snapshots", handler: a.listSnapshots, query: []string{"sandbox"}, role: api.RoleReader},
		{method: "GET", pattern: "/v1/snapshots/{id}", handler: a.getSnapshot, role: api.RoleReader},
		{method: "DELETE", pattern: "/v1/snapshots/{id}", handler: a.deleteSnapshot},
		{method: "POST", pattern: "/v1/sandboxes/{id}/restore", handler: a.restoreSandbox, long: true},
		{method: "POST", pattern: "/v1/sandboxes/{id}/fork", handler: a.forkSandbox, long: true},
		{method: "GET", pattern: "/v1/sandboxes", handler: a.listSandboxes, query: []string{"state", "label", "limit", "cursor"}, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}", handler: a.getSandbox, role: api.RoleReader, anyNode: true},
		{method: "DELETE", pattern: "/v1/sandboxes/{id}", handler: a.deleteSandbox},
		{method: "POST", pattern: "/v1/sandboxes/{id}/stop", handler: a.stopSandbox},
		{method: "POST", pattern: "/v1/sandboxes/{id}/start", handler: a.startSandbox},
		{method: "POST", pattern: "/v1/sandboxes/{id}/pause", handler: a.pauseSandbox},
		{method: "POST", pattern: "/v1/sandboxes/{id}/resume", handler: a.resumeSandbox},
		{method: "POST", pattern: "/v1/sandboxes/{id}/keepalive", handler: a.keepalive},
		{method: "GET", pattern: "/v1/sandboxes/{id}/network", handler: a.getNetwork, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}/metrics", handler: a.sandboxMetrics, role: api.RoleReader},
		{method: "PUT", pattern: "/v1/sandboxes/{id}/network", handler: a.setNetwork},
		{method: "GET", pattern: "/v1/sandboxes/{id}/events", handler: a.listSandboxEvents, query: []string{"after", "type", "limit"}, long: true, role: api.RoleReader, anyNode: true},

		{method: "GET", pattern: "/v1/events", handler: a.listEvents, query: []string{"after", "type", "sandbox", "limit"}, long: true, role: api.RoleReader},

		{method: "POST", pattern: "/v1/sandboxes/{id}/exec", handler: a.exec, long: true},
		{method: "POST", pattern: "/v1/sandboxes/{id}/exec/stream", handler: a.execStream, long: true},

		{method: "POST", pattern: "/v1/sandboxes/{id}/processes", handler: a.startProcess},
		{method: "GET", pattern: "/v1/sandboxes/{id}/processes", handler: a.listProcesses, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}/processes/{pid}", handler: a.getProcess, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}/processes/{pid}/output", handler: a.processOutput, query: []string{"cursor", "follow"}, long: true, role: api.RoleReader},
		{method: "POST", pattern: "/v1/sandboxes/{id}/processes/{pid}/stdin", handler: a.processStdin, query: []string{"close"}, long: true},
		{method: "POST", pattern: "/v1/sandboxes/{id}/processes/{pid}/signal", handler: a.signalProcess},
		{method: "POST", pattern: "/v1/sandboxes/{id}/processes/{pid}/resize", handler: a.resizeProcess},
		{method: "GET", pattern: "/v1/sandboxes/{id}/processes/{pid}/wait", handler: a.waitProcess, query: []string{"timeout_ms"}, long: true, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}/processes/{pid}/terminal", handler: a.attachTerminal, query: []string{"cursor"}, long: true},
		{method: "GET", pattern: "/v1/sandboxes/{id}/terminal", handler: a.terminal, query: []string{"cmd", "cwd", "rows", "cols"}, long: true},
		{method: "GET", pattern: "/v1/sandboxes/{id}/ports", handler: a.listPorts, role: api.RoleReader},
		{method: "PUT", pattern: "/v1/sandboxes/{id}/ports/{port}", handler: a.setPort},
		{method: "POST", pattern: "/v1/sandboxes/{id}/ports/{port}/url", handler: a.previewURL},

		{method: "GET", pattern: "/v1/sandboxes/{id}/files", handler: a.readFile, query: []string{"path"}, long: true, role: api.RoleReader},
		{method: "PUT", pattern: "/v1/sandboxes/{id}/files", handler: a.writeFile, query: []string{"path", "mode", "parents"}, long: true},
		{method: "DELETE", pattern: "/v1/sandboxes/{id}/files", handler: a.removeFile, query: []string{"path", "recursive"}},
		{method: "GET", pattern: "/v1/sandboxes/{id}/files/list", handler: a.listFiles, query: []string{"path"}, role: api.RoleReader},
		{method: "GET", pattern: "/v1/sandboxes/{id}/files/stat", handler: a.statFile, query: []string{"path"}, role: api.RoleReader},
		{method: "POST", pattern: "/v1/sandboxes/{id}/files/mkdir", handler: a.mkdir},
		{method: "POST", pattern: "/v1/sandboxes/{id}/files/move", handler: a.move},
		{method: "GET", pattern: "/v1/sandboxes/{id}/files/tar", handler: a.downloadTar, query: []string{"path"}, long: true, role: api.RoleReader},
		{method: "PUT", pattern: "/v1/sandboxes/{id}/files/tar", handler: a.uploadTar, query: []string{"path"}, long: true},
		{method: "GET", pattern: "/v1/sandboxes/{id}/files/watch", handler: a.watchFiles, query: []string{"path", "recursive"}, long: true, role: api.RoleReader},
	}
}
