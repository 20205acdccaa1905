package api

// Quotas are what an admin sets on a tenant (PUT /v1/tenants/{id}/quotas):
// bounds on what the tenant holds. A field left out (or null) follows the
// server's default for it (hutch serve --tenant-*); 0 is no limit. A
// create past one is 429 quota_exceeded, its message naming the quota.
//
// Sandboxes counts every sandbox that is neither destroyed nor failed, a
// stopped one included (it keeps its files and its place). MemoryMB, CPU
// and Pids add up the limits of the sandboxes that hold them: all but the
// stopped ones; starting a stopped sandbox is admitted as a create is.
//
// DiskMB bounds everything of the tenant's on disk: its sandboxes' files
// (as last measured), its snapshots, its volumes (their sizes) and its
// templates (their unpacked layers). A create that adds to it (a sandbox,
// a snapshot, a volume, a template) is refused once nothing is left; a
// running sandbox that grows while its tenant is past its disk is
// stopped (on a filesystem without quotas, where hutch measures).
//
// Snapshots, Volumes and Templates count those of the tenant, and the
// *MB fields the bytes they take (a volume: its size). Apps, Keys and
// Secrets count those of the tenant. Watches and Streams bound what its
// keys hold open on this server at once: file watches, and streams
// (events, command and process output, logs, a terminal's input).
type Quotas struct {
	Sandboxes   *int     `json:"sandboxes,omitempty"`
	MemoryMB    *int     `json:"memory_mb,omitempty"`
	CPU         *float64 `json:"cpu,omitempty"`
	Pids        *int     `json:"pids,omitempty"`
	DiskMB      *int     `json:"disk_mb,omitempty"`
	Snapshots   *int     `json:"snapshots,omitempty"`
	SnapshotsMB *int     `json:"snapshots_mb,omitempty"`
	Volumes     *int     `json:"volumes,omitempty"`
	VolumesMB   *int     `json:"volumes_mb,omitempty"`
	Templates   *int     `json:"templates,omitempty"`
	TemplatesMB *int     `json:"templates_mb,omitempty"`
	Apps        *int     `json:"apps,omitempty"`
	Keys        *int     `json:"keys,omitempty"`
	Secrets     *int     `json:"secrets,omitempty"`
	Watches     *int     `json:"watches,omitempty"`
	Streams     *int     `json:"streams,omitempty"`
}

// QuotaLimits are the quotas in force on a tenant: each one set on it, else
// the server's default. 0 is no limit.
type QuotaLimits struct {
	Sandboxes   int     `json:"sandboxes"`
	MemoryMB    int     `json:"memory_mb"`
	CPU         float64 `json:"cpu"`
	Pids        int     `json:"pids"`
	DiskMB      int     `json:"disk_mb"`
	Snapshots   int     `json:"snapshots"`
	SnapshotsMB int     `json:"snapshots_mb"`
	Volumes     int     `json:"volumes"`
	VolumesMB   int     `json:"volumes_mb"`
	Templates   int     `json:"templates"`
	TemplatesMB int     `json:"templates_mb"`
	Apps        int     `json:"apps"`
	Keys        int     `json:"keys"`
	Secrets     int     `json:"secrets"`
	Watches     int     `json:"watches"`
	Streams     int     `json:"streams"`
}

// QuotaUsage is what a tenant holds now, counted as Quotas says; the *MB
// fields are rounded up to whole MiB. DiskMB counts a sandbox's files as
// last measured (GET of the sandbox measures them anew). Watches and
// Streams are those open on the server that answers.
type QuotaUsage struct {
	Sandboxes   int     `json:"sandboxes"`
	MemoryMB    int     `json:"memory_mb"`
	CPU         float64 `json:"cpu"`
	Pids        int     `json:"pids"`
	DiskMB      int     `json:"disk_mb"`
	Snapshots   int     `json:"snapshots"`
	SnapshotsMB int     `json:"snapshots_mb"`
	Volumes     int     `json:"volumes"`
	VolumesMB   int     `json:"volumes_mb"`
	Templates   int     `json:"templates"`
	TemplatesMB int     `json:"templates_mb"`
	Apps        int     `json:"apps"`
	Keys        int     `json:"keys"`
	Secrets     int     `json:"secrets"`
	Watches     int     `json:"watches"`
	Streams     int     `json:"streams"`
}

// TenantQuotas is the answer of GET and PUT /v1/tenants/{id}/quotas: what
// is set on the tenant, what is in force, and its usage against it.
// DiskEnforced says whether DiskMB is enforced; it is, since disk usage
// is measured (the field stays for clients that read it).
type TenantQuotas struct {
	TenantID     string      `json:"tenant_id"`
	Set          Quotas      `json:"set"`
	Limits       QuotaLimits `json:"limits"`
	Usage        QuotaUsage  `json:"usage"`
	DiskEnforced bool        `json:"disk_enforced"`
}
