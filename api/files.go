package api

import "time"

// File types of FileInfo.Type.
const (
	FileRegular = "file"
	FileDir     = "dir"
	FileSymlink = "symlink"
	FileOther   = "other"
)

// FileInfo describes one path inside a sandbox. Path is as the sandbox
// sees it; Mode is octal permission bits such as "0644".
type FileInfo struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModTime    time.Time `json:"mod_time"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// FileList is the answer of GET /v1/sandboxes/{id}/files/list.
type FileList struct {
	Path    string     `json:"path"`
	Entries []FileInfo `json:"entries"`
}

// MkdirRequest is the body of POST /v1/sandboxes/{id}/files/mkdir; it
// creates parents as needed (mkdir -p).
type MkdirRequest struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"`
}

// MoveRequest is the body of POST /v1/sandboxes/{id}/files/move.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// TarResult is the answer of PUT /v1/sandboxes/{id}/files/tar.
type TarResult struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}
