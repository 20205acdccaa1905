package api

import "time"

// Watch event types.
const (
	WatchCreate   = "create"
	WatchWrite    = "write"
	WatchRemove   = "remove"
	WatchRename   = "rename"
	WatchOverflow = "overflow"
)

// WatchEvent is one change under a watched directory, sent as the data of
// one Server-Sent Event of GET /v1/sandboxes/{id}/files/watch (the event's
// name is its Type).
//
// Path is relative to the watched directory ("." for the directory
// itself), never absolute. A rename within the watch has OldPath; a move
// into the watch is a create and a move out of it a remove. Writes to a
// path are coalesced while an earlier create or write of it waits to be
// sent, so a new file written at once arrives as a single create. A file
// the files API writes (through a temporary name renamed into place) is
// one create of its name, new or replaced; the temporary name never shows.
//
// An overflow event means events were lost (the kernel's or the agent's
// queue filled): rescan to catch up. When it has a Path, that directory
// could not be watched (the sandbox's watch limit was reached) and changes
// below it will not be reported.
type WatchEvent struct {
	Type    string    `json:"type"`
	Path    string    `json:"path,omitempty"`
	OldPath string    `json:"old_path,omitempty"`
	IsDir   bool      `json:"is_dir,omitempty"`
	Time    time.Time `json:"time"`
}
