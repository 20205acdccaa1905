package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// One SQLite file serves one process, whose clock is the store's: the
// times of nodes and leases are this process's time.Now.

const nodeCols = `name, advertise, drivers, labels, cpus, memory_bytes, committed_memory_bytes, running,
	state, drain_deadline, started_at, heartbeat_at`

// RegisterNode implements store.Store.
func (s *Store) RegisterNode(ctx context.Context, n store.Node) (*store.Node, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	if err := store.CheckNode(n); err != nil {
		return nil, err
	}
	drivers, err := json.Marshal(nonNil(n.Drivers))
	if err != nil {
		return nil, err
	}
	labels, err := encodeMap(n.Labels)
	if err != nil {
		return nil, err
	}
	now := formatTime(time.Now())
	var out *store.Node
	err = s.write(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `INSERT INTO nodes (name, advertise, drivers, labels, cpus, memory_bytes,
				committed_memory_bytes, running, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET advertise = excluded.advertise, drivers = excluded.drivers,
				labels = excluded.labels, cpus = excluded.cpus, memory_bytes = excluded.memory_bytes,
				committed_memory_bytes = excluded.committed_memory_bytes, running = excluded.running,
				started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at
			RETURNING `+nodeCols,
			n.Name, n.Advertise, string(drivers), labels, n.Load.CPUs, n.Load.MemoryBytes, n.Load.CommittedMemoryBytes,
			n.Load.Running, now, now)
		var err error
		out, err = scanNode(row)
		return err
	})
	return out, err
}

// HeartbeatNode implements store.Store.
func (s *Store) HeartbeatNode(ctx context.Context, name string, load store.NodeLoad) (*store.Node, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	var out *store.Node
	err := s.write(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `UPDATE nodes SET cpus = ?, memory_bytes = ?, committed_memory_bytes = ?,
				running = ?, heartbeat_at = ?
			WHERE name = ? RETURNING `+nodeCols,
			load.CPUs, load.MemoryBytes, load.CommittedMemoryBytes, load.Running, formatTime(time.Now()), name)
		var err error
		out, err = scanNode(row)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NodeNotFound(name)
		}
		return err
	})
	return out, err
}

// LeaveNode implements store.Store.
func (s *Store) LeaveNode(ctx context.Context, name string) error {
	if err := store.RequireSystem(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE nodes SET heartbeat_at = ? WHERE name = ?`,
			formatTime(time.Now().Add(-store.LostAfter-time.Second)), name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return store.NodeNotFound(name)
		}
		return err
	})
}

// GetNode implements store.Store.
func (s *Store) GetNode(ctx context.Context, name string) (*store.Node, error) {
	if err := store.CheckAdminScope(ctx); err != nil {
		return nil, err
	}
	n, err := scanNode(s.reads.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NodeNotFound(name)
	}
	return n, err
}

// ListNodes implements store.Store.
func (s *Store) ListNodes(ctx context.Context) ([]*store.Node, error) {
	if err := store.CheckAdminScope(ctx); err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	defer rows.Close()
	var out []*store.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}

// DrainNode implements store.Store.
func (s *Store) DrainNode(ctx context.Context, name string, deadline *time.Time) (*store.Node, error) {
	return s.setNodeState(ctx, name, store.NodeDraining, deadline)
}

// ActivateNode implements store.Store.
func (s *Store) ActivateNode(ctx context.Context, name string) (*store.Node, error) {
	return s.setNodeState(ctx, name, store.NodeActive, nil)
}

// setNodeState sets name's state and drain deadline.
func (s *Store) setNodeState(ctx context.Context, name string, state store.NodeState, deadline *time.Time) (*store.Node, error) {
	if err := store.CheckAdminScope(ctx); err != nil {
		return nil, err
	}
	var out *store.Node
	err := s.write(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `UPDATE nodes SET state = ?, drain_deadline = ? WHERE name = ? RETURNING `+nodeCols,
			string(state), formatTimePtr(deadline), name)
		var err error
		out, err = scanNode(row)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NodeNotFound(name)
		}
		return err
	})
	return out, err
}

// DeleteNode implements store.Store.
func (s *Store) DeleteNode(ctx context.Context, name string) error {
	if err := store.CheckAdminScope(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("delete node: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return store.NodeNotFound(name)
		}
		return nil
	})
}

// scanNode reads one row of nodeCols, its age at the time of the read.
func scanNode(row interface{ Scan(...any) error }) (*store.Node, error) {
	var (
		n                    store.Node
		drivers              string
		labels, deadline     sql.NullString
		state, started, beat string
	)
	if err := row.Scan(&n.Name, &n.Advertise, &drivers, &labels, &n.Load.CPUs, &n.Load.MemoryBytes,
		&n.Load.CommittedMemoryBytes, &n.Load.Running, &state, &deadline, &started, &beat); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("read node: %w", err)
	}
	if err := json.Unmarshal([]byte(drivers), &n.Drivers); err != nil {
		return nil, fmt.Errorf("stored drivers of node %s: %w", n.Name, err)
	}
	var err error
	if n.Labels, err = decodeMap(labels); err != nil {
		return nil, err
	}
	if n.DrainDeadline, err = parseTimePtr(deadline); err != nil {
		return nil, err
	}
	if n.StartedAt, err = parseTime(started); err != nil {
		return nil, err
	}
	if n.HeartbeatAt, err = parseTime(beat); err != nil {
		return nil, err
	}
	n.State = store.NodeState(state)
	n.HeartbeatAge = max(0, time.Since(n.HeartbeatAt))
	return &n, nil
}

// nonNil is s, or an empty slice for nil, so it is stored as [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
