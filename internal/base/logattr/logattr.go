// Package logattr holds the one constructor of each log attribute that
// names an id, so the keys never drift between packages: a search for
// sandbox.id finds every line about a sandbox, whoever wrote it.
package logattr

import "log/slog"

// Sandbox is a sandbox's id.
func Sandbox(id string) slog.Attr { return slog.String("sandbox.id", id) }

// Tenant is a tenant's id.
func Tenant(id string) slog.Attr { return slog.String("tenant.id", id) }

// Key is an API key's id (never the key).
func Key(id string) slog.Attr { return slog.String("key.id", id) }
