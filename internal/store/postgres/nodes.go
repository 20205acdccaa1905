package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// Every time of a node is the database's now(), and every read returns
// now() beside the row, so a node's age is measured on the one clock
// every node shares.

const nodeCols = `name, advertise, drivers, labels, cpus, memory_bytes, committed_memory_bytes, running,
	state, drain_deadline, started_at, heartbeat_at, now()`

// RegisterNode implements store.Store.
func (s *Store) RegisterNode(ctx context.Context, n store.Node) (*store.Node, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	if err := store.CheckNode(n); err != nil {
		return nil, err
	}
	drivers := n.Drivers
	if drivers == nil {
		drivers = []string{}
	}
	dj, err := json.Marshal(drivers)
	if err != nil {
		return nil, err
	}
	labels, err := mapArg(n.Labels)
	if err != nil {
		return nil, err
	}
	var out *store.Node
	err = s.write(ctx, func(tx pgx.Tx) error {
		row := tx.QueryRow(ctx, `INSERT INTO nodes (name, advertise, drivers, labels, cpus, memory_bytes,
				committed_memory_bytes, running, started_at, heartbeat_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now())
			ON CONFLICT (name) DO UPDATE SET advertise = excluded.advertise, drivers = excluded.drivers,
				labels = excluded.labels, cpus = excluded.cpus, memory_bytes = excluded.memory_bytes,
				committed_memory_bytes = excluded.committed_memory_bytes, running = excluded.running,
				started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at
			RETURNING `+nodeCols,
			n.Name, n.Advertise, dj, labels, n.Load.CPUs, n.Load.MemoryBytes, n.Load.CommittedMemoryBytes, n.Load.Running)
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
	err := s.write(ctx, func(tx pgx.Tx) error {
		row := tx.QueryRow(ctx, `UPDATE nodes SET cpus = $1, memory_bytes = $2, committed_memory_bytes = $3,
				running = $4, heartbeat_at = now()
			WHERE name = $5 RETURNING `+nodeCols,
			load.CPUs, load.MemoryBytes, load.CommittedMemoryBytes, load.Running, name)
		var err error
		out, err = scanNode(row)
		if errors.Is(err, pgx.ErrNoRows) {
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
	return s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - make_interval(secs => $1) WHERE name = $2`,
			(store.LostAfter + time.Second).Seconds(), name)
		if err == nil && tag.RowsAffected() == 0 {
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
	n, err := scanNode(s.pool.QueryRow(ctx, `SELECT `+nodeCols+` FROM nodes WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.NodeNotFound(name)
	}
	return n, err
}

// ListNodes implements store.Store.
func (s *Store) ListNodes(ctx context.Context) ([]*store.Node, error) {
	if err := store.CheckAdminScope(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+nodeCols+` FROM nodes ORDER BY name`)
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
	err := s.write(ctx, func(tx pgx.Tx) error {
		row := tx.QueryRow(ctx, `UPDATE nodes SET state = $1, drain_deadline = $2 WHERE name = $3 RETURNING `+nodeCols,
			string(state), store.TimePtr(deadline), name)
		var err error
		out, err = scanNode(row)
		if errors.Is(err, pgx.ErrNoRows) {
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
	return s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM nodes WHERE name = $1`, name)
		if err != nil {
			return fmt.Errorf("delete node: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.NodeNotFound(name)
		}
		return nil
	})
}

// scanNode reads one row of nodeCols, its age on the database's clock.
func scanNode(row pgx.Row) (*store.Node, error) {
	var (
		n             store.Node
		drivers       []byte
		labels        []byte
		state         string
		running       int64
		started, beat time.Time
		now           time.Time
	)
	if err := row.Scan(&n.Name, &n.Advertise, &drivers, &labels, &n.Load.CPUs, &n.Load.MemoryBytes,
		&n.Load.CommittedMemoryBytes, &running, &state, &n.DrainDeadline, &started, &beat, &now); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("read node: %w", err)
	}
	if err := decodeJSON(drivers, &n.Drivers, "drivers of node "+n.Name); err != nil {
		return nil, err
	}
	var err error
	if n.Labels, err = decodeMap(labels); err != nil {
		return nil, err
	}
	n.Load.Running = int(running)
	n.State = store.NodeState(state)
	n.StartedAt, n.HeartbeatAt = store.Time(started), store.Time(beat)
	n.DrainDeadline = store.TimePtr(n.DrainDeadline)
	n.HeartbeatAge = max(0, now.Sub(beat))
	return &n, nil
}
