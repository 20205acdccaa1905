package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
)

var _ store.Ports = (*Store)(nil)

// SetPort implements store.Ports. The tenant comes from the sandbox's row,
// read in the same statement and limited to the caller's scope.
func (s *Store) SetPort(ctx context.Context, p *store.PortSetting) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if err := store.CheckPort(p); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		cond, args := scoped(sc, "tenant_id")
		var tenant string
		err := tx.QueryRowContext(ctx, `SELECT tenant_id FROM sandboxes WHERE id = ?`+cond,
			append([]any{p.SandboxID}, args...)...).Scan(&tenant)
		if errors.Is(err, sql.ErrNoRows) {
			return store.SandboxNotFound(p.SandboxID)
		}
		if err != nil {
			return fmt.Errorf("set port %d of sandbox %s: %w", p.Port, p.SandboxID, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO sandbox_ports (sandbox_id, tenant_id, port, public, updated_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (sandbox_id, port) DO UPDATE SET public = excluded.public, updated_at = excluded.updated_at`,
			p.SandboxID, tenant, p.Port, p.Public, formatTime(p.UpdatedAt))
		if err != nil {
			return fmt.Errorf("set port %d of sandbox %s: %w", p.Port, p.SandboxID, err)
		}
		p.TenantID = tenant
		return nil
	})
}

// GetPort implements store.Ports.
func (s *Store) GetPort(ctx context.Context, sandboxID string, port int) (store.PortSetting, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.PortSetting{}, err
	}
	cond, args := scoped(sc, "tenant_id")
	p, err := scanPort(s.reads.QueryRowContext(ctx, `SELECT sandbox_id, tenant_id, port, public, updated_at
		FROM sandbox_ports WHERE sandbox_id = ? AND port = ?`+cond, append([]any{sandboxID, port}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return store.PortSetting{}, store.PortNotFound(sandboxID, port)
	}
	if err != nil {
		return store.PortSetting{}, fmt.Errorf("get port %d of sandbox %s: %w", port, sandboxID, err)
	}
	return p, nil
}

// ListPorts implements store.Ports.
func (s *Store) ListPorts(ctx context.Context, sandboxID string) ([]store.PortSetting, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := getSandbox(ctx, s.reads, sc, sandboxID); err != nil {
		return nil, err
	}
	cond, args := scoped(sc, "tenant_id")
	rows, err := s.reads.QueryContext(ctx, `SELECT sandbox_id, tenant_id, port, public, updated_at
		FROM sandbox_ports WHERE sandbox_id = ?`+cond+` ORDER BY port`, append([]any{sandboxID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("list ports of sandbox %s: %w", sandboxID, err)
	}
	defer rows.Close()
	var out []store.PortSetting
	for rows.Next() {
		p, err := scanPort(rows)
		if err != nil {
			return nil, fmt.Errorf("list ports of sandbox %s: %w", sandboxID, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list ports of sandbox %s: %w", sandboxID, err)
	}
	return out, nil
}

func scanPort(row interface{ Scan(...any) error }) (store.PortSetting, error) {
	var p store.PortSetting
	var updated string
	if err := row.Scan(&p.SandboxID, &p.TenantID, &p.Port, &p.Public, &updated); err != nil {
		return p, err
	}
	t, err := parseTime(updated)
	if err != nil {
		return p, err
	}
	p.UpdatedAt = t
	return p, nil
}
