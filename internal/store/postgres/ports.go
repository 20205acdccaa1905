package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

var _ store.Ports = (*Store)(nil)

const portCols = `sandbox_id, tenant_id, port, public, updated_at`

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
	args := pgx.NamedArgs{"sandbox": p.SandboxID, "port": p.Port, "public": p.Public, "at": p.UpdatedAt}
	cond := scoped(sc, "tenant_id", args)
	var tenant string
	err = s.pool.QueryRow(ctx, `INSERT INTO sandbox_ports (`+portCols+`)
		SELECT id, tenant_id, @port, @public, @at FROM sandboxes WHERE id = @sandbox`+cond+`
		ON CONFLICT (sandbox_id, port) DO UPDATE SET public = excluded.public, updated_at = excluded.updated_at
		RETURNING tenant_id`, args).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.SandboxNotFound(p.SandboxID)
	}
	if err != nil {
		return fmt.Errorf("set port %d of sandbox %s: %w", p.Port, p.SandboxID, err)
	}
	p.TenantID = tenant
	return nil
}

// GetPort implements store.Ports.
func (s *Store) GetPort(ctx context.Context, sandboxID string, port int) (store.PortSetting, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.PortSetting{}, err
	}
	args := pgx.NamedArgs{"sandbox": sandboxID, "port": port}
	cond := scoped(sc, "tenant_id", args)
	p, err := scanPort(s.pool.QueryRow(ctx, `SELECT `+portCols+` FROM sandbox_ports WHERE sandbox_id = @sandbox AND port = @port`+cond, args))
	if errors.Is(err, pgx.ErrNoRows) {
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
	if _, err := getSandbox(ctx, s.pool, sc, sandboxID, ""); err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{"sandbox": sandboxID}
	cond := scoped(sc, "tenant_id", args)
	rows, err := s.pool.Query(ctx, `SELECT `+portCols+` FROM sandbox_ports WHERE sandbox_id = @sandbox`+cond+` ORDER BY port`, args)
	if err != nil {
		return nil, fmt.Errorf("list ports of sandbox %s: %w", sandboxID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PortSetting, error) { return scanPort(r) })
	if err != nil {
		return nil, fmt.Errorf("list ports of sandbox %s: %w", sandboxID, err)
	}
	return out, nil
}

func scanPort(row pgx.Row) (store.PortSetting, error) {
	var p store.PortSetting
	err := row.Scan(&p.SandboxID, &p.TenantID, &p.Port, &p.Public, &p.UpdatedAt)
	return p, err
}
