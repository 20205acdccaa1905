package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/keyfile"
	"github.com/hutchdev/hutch/internal/edge/gateway"
)

// openGateway builds the provider gateway from the operator's providers
// file; with none, it refuses every call as naming no provider.
func (s *Server) openGateway(_ context.Context, p *parts) error {
	var providers []gateway.Provider
	if s.cfg.Providers != "" {
		var err error
		if providers, err = gateway.LoadFile(s.cfg.Providers); err != nil {
			return err
		}
		names := make([]string, len(providers))
		for i, pr := range providers {
			names[i] = pr.Name
		}
		s.log.Info("provider gateway", "providers", strings.Join(names, ","))
	}
	key, err := keyfile.Load(filepath.Join(s.cfg.DataDir, "gateway.key"), gateway.MinKeyBytes)
	if err != nil {
		return fmt.Errorf("gateway key: %w", err)
	}
	gw, err := gateway.New(gateway.Config{Providers: providers, Key: key, Sandboxes: p.directory, Keys: p.secrets, Events: p.events,
		Observer: p.metrics, Log: s.log})
	if err != nil {
		return err
	}
	s.onClose("provider gateway", func(context.Context) error { gw.Close(); return nil })
	p.gateway = gw
	return nil
}
