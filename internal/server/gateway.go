package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/gateway"
	"github.com/hutchdev/hutch/internal/keyfile"
	"github.com/hutchdev/hutch/internal/secrets"
	"github.com/hutchdev/hutch/internal/store"
)

// newGateway builds the provider gateway from the operator's providers
// file; with none, it serves only refusals and sandboxes get no gateway
// environment.
func newGateway(cfg config.Config, st store.Store, sec *secrets.Service, events gateway.EventAppender, addr net.Addr, log *slog.Logger) (*gateway.Gateway, error) {
	var providers []gateway.Provider
	if cfg.Providers != "" {
		var err error
		if providers, err = gateway.LoadFile(cfg.Providers); err != nil {
			return nil, err
		}
	}
	key, err := keyfile.Load(filepath.Join(cfg.DataDir, "gateway.key"), gateway.MinKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("gateway key: %w", err)
	}
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name
	}
	if len(providers) > 0 {
		log.Info("provider gateway", "providers", strings.Join(names, ","))
	}
	return gateway.New(gateway.Config{Providers: providers, Key: key, URL: listenerURL(addr) + "/provider/v1",
		Sandboxes: st, Keys: sec, Events: events, Log: log})
}

// listenerURL is how a process on this host reaches the API listener: an
// unspecified address (all interfaces) is reached on loopback.
func listenerURL(addr net.Addr) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	ip := ap.Addr()
	switch {
	case ip.IsUnspecified() && ip.Is4():
		ip = netip.MustParseAddr("127.0.0.1")
	case ip.IsUnspecified():
		ip = netip.IPv6Loopback()
	}
	return "http://" + netip.AddrPortFrom(ip, ap.Port()).String()
}
