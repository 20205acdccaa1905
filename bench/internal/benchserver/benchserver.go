// Package benchserver starts a hutch server inside a benchmark program, on
// loopback with a temporary data directory (in the system's temporary
// directory, or under a directory the benchmark chooses, such as a
// filesystem it mounted), and hands back a client for it.
package benchserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server"
	"github.com/hutchdev/hutch/internal/server/config"
)

// Server is a running hutch server and a client of its admin tenant.
type Server struct {
	Client *client.Client
	Key    string // the admin tenant's API key
	srv    *server.Server
	dir    string
	cfg    config.Config
	log    *slog.Logger
}

// Start starts a server whose data directory is in the system's temporary
// directory, logging nowhere; change adjusts its configuration (driver,
// agent, warm pool) before it is validated.
func Start(ctx context.Context, change func(*config.Config)) (*Server, error) {
	return StartIn(ctx, "", nil, change)
}

// StartIn starts a server whose data directory is in a new directory under
// base ("" is the system's temporary directory), so the storage backend
// it probes is base's filesystem's. log receives the server's log (nil
// discards it); change adjusts the configuration before it is validated.
func StartIn(ctx context.Context, base string, log *slog.Logger, change func(*config.Config)) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp(base, "hutch-bench-")
	if err != nil {
		return nil, err
	}
	// Made the way an operator who runs the process driver as root makes
	// it: each sandbox's uid looks its directory up by path.
	for _, p := range []string{dir, filepath.Join(dir, "data"), filepath.Join(dir, "data", "sandboxes")} {
		if err := os.MkdirAll(p, 0o711); err == nil {
			err = os.Chmod(p, 0o711)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	// Benchmarks load the host on purpose (hundreds of sandboxes of one
	// tenant, limits promised past its memory): admission is not what they
	// measure.
	cfg.TenantQuotas = api.QuotaLimits{}
	cfg.MaxMemoryOvercommit, cfg.MaxPidsOvercommit, cfg.MaxCPUOvercommit = 0, 0, 0
	change(&cfg)
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("config: %w", err)
	}
	srv, err := server.Start(ctx, cfg, log, "bench")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	key, err := os.ReadFile(srv.AdminKeyPath)
	if err != nil {
		srv.Shutdown(context.WithoutCancel(ctx))
		os.RemoveAll(dir)
		return nil, err
	}
	k := strings.TrimSpace(string(key))
	return &Server{Client: client.New("http://"+srv.Addr().String(), k), Key: k, srv: srv, dir: dir, cfg: cfg, log: log}, nil
}

// Restart shuts the server down as hutch serve does on SIGTERM (its
// sandboxes keep running) and starts a new one on the same data
// directory and address, with a new client (the old one's connections
// went with the old server). started is when the new server's start
// began, after the old one had shut down; a failed start leaves s
// without a server, and Stop then only removes the directory.
func (s *Server) Restart(ctx context.Context) (started time.Time, err error) {
	s.srv.Shutdown(context.WithoutCancel(ctx))
	cfg := s.cfg
	cfg.Listen = s.srv.Addr().String()
	s.srv = nil
	started = time.Now()
	srv, err := server.Start(ctx, cfg, s.log, "bench")
	if err != nil {
		return started, fmt.Errorf("restart: %w", err)
	}
	s.srv = srv
	s.Client = client.New("http://"+srv.Addr().String(), s.Key)
	return started, nil
}

// Stop shuts the server down and removes its data directory.
func (s *Server) Stop(ctx context.Context) {
	if s.srv != nil {
		s.srv.Shutdown(context.WithoutCancel(ctx))
	}
	os.RemoveAll(s.dir)
}

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return filepath.Join(s.dir, "data") }

// Addr is the address the server's API listens on.
func (s *Server) Addr() string { return s.srv.Addr().String() }
