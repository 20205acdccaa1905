package server

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/keyfile"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/edge/gateway"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// newGateway builds the provider gateway from the operator's providers
// file; with none, it refuses every call as naming no provider.
func newGateway(cfg config.Config, st store.Store, sec *secrets.Service, events events.Appender, obs gateway.Observer, log *slog.Logger) (*gateway.Gateway, error) {
	var providers []gateway.Provider
	if cfg.Providers != "" {
		var err error
		if providers, err = gateway.LoadFile(cfg.Providers); err != nil {
			return nil, err
		}
		names := make([]string, len(providers))
		for i, p := range providers {
			names[i] = p.Name
		}
		log.Info("provider gateway", "providers", strings.Join(names, ","))
	}
	key, err := keyfile.Load(filepath.Join(cfg.DataDir, "gateway.key"), gateway.MinKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("gateway key: %w", err)
	}
	return gateway.New(gateway.Config{Providers: providers, Key: key, Sandboxes: st, Keys: sec, Events: events, Observer: obs, Log: log})
}
