package api

// Info is the answer of GET /v1/info. Store names the store that keeps
// the server's state. Driver, Isolation, Degraded, Templates and Features
// describe the default driver, the one a create gets unless it names
// another; Drivers lists every driver this build has.
type Info struct {
	Version   string          `json:"version"`
	Node      string          `json:"node"`
	Store     string          `json:"store"`
	Driver    string          `json:"driver"`
	Isolation string          `json:"isolation"`
	Degraded  []string        `json:"degraded"`
	Templates []string        `json:"templates"`
	Limits    InfoLimits      `json:"limits"`
	Features  map[string]bool `json:"features"`
	Drivers   []DriverInfo    `json:"drivers"`
	// Storage is what the filesystem under the data directory offers,
	// probed at start.
	Storage *StorageInfo `json:"storage,omitempty"`
}

// StorageInfo is the storage backend the data directory's filesystem
// allows: what snapshots cost there and what limits disk.
type StorageInfo struct {
	Backend      string `json:"backend"` // btrfs, xfs, overlay, or "" when none works
	Filesystem   string `json:"filesystem"`
	Snapshot     string `json:"snapshot"`      // subvolume, reflink or copy
	Quota        string `json:"quota"`         // qgroup, project or none
	QuotaEnabled bool   `json:"quota_enabled"` // a disk limit set now is enforced
	Degraded     string `json:"degraded,omitempty"`
}

// DriverInfo is one driver of this build: loaded (its sandboxes run here)
// or not, and then why not.
type DriverInfo struct {
	Name      string          `json:"name"`
	Default   bool            `json:"default"`
	Loaded    bool            `json:"loaded"`
	Error     string          `json:"error,omitempty"`
	Isolation string          `json:"isolation,omitempty"`
	Degraded  []string        `json:"degraded,omitempty"`
	Templates []string        `json:"templates,omitempty"`
	Features  map[string]bool `json:"features,omitempty"`
}

// InfoLimits are the server's defaults and ceilings.
type InfoLimits struct {
	Default        Limits `json:"default"`
	Max            Limits `json:"max"`
	MaxTimeoutS    int    `json:"max_timeout_s"`
	MaxFileBytes   int64  `json:"max_file_bytes"`
	MaxOutputBytes int    `json:"max_output_bytes"`
}

// Error is the one error shape of the API.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody carries a stable code and a message a person can act on.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
