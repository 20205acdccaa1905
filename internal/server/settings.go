package server

import (
	"context"
	"net/netip"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/server/config"
)

// openSettings puts in force, over the flags' settings, those a PATCH
// /v1/settings kept in the store, and builds the service that changes
// them from then on. It runs before the sandbox service recovers or runs
// its loops, so both use the settings in force.
func (s *Server) openSettings(ctx context.Context, p *parts) (err error) {
	p.settings, err = settings.New(tenancy.System(ctx), settings.Config{
		Store:    p.store,
		Events:   p.events,
		Flags:    s.cfg.Settings(),
		ReadOnly: readOnly(s.cfg),
		Check:    sandbox.CheckSettings,
		Apply:    p.sandboxes.ApplySettings,
		Log:      s.log,
	})
	return err
}

// readOnly is what cfg fixes that matters to an operator beside the
// settings, as GET /v1/settings shows it: where hutch listens and keeps
// its state, what its sandboxes run on and may hold, what they may
// reach, where previews are served.
func readOnly(cfg config.Config) []settings.Fixed {
	return []settings.Fixed{
		{Key: "listen", Flag: "--listen", Value: cfg.Listen},
		{Key: "data", Flag: "--data", Value: cfg.DataDir},
		{Key: "store", Flag: "--store", Value: cfg.Store},
		{Key: "store_url", Flag: "--store-url", Value: cfg.StoreURLRedacted()},
		{Key: "driver", Flag: "--driver", Value: cfg.Driver},
		{Key: "drivers", Flag: "--drivers", Value: cfg.Drivers},
		{Key: "log_level", Flag: "--log-level", Value: cfg.LogLevel},
		{Key: "warm_pool", Flag: "--warm-pool", Value: cfg.WarmPool},
		{Key: "default_template", Flag: "--default-template", Value: cfg.DefaultTemplate},
		{Key: "default_limits", Flag: "--default-memory-mb and --default-pids", Value: cfg.DefaultLimits},
		{Key: "max_limits", Flag: "", Value: cfg.MaxLimits},
		{Key: "reserve_memory_mb", Flag: "--reserve-memory-mb", Value: cfg.ReserveMemoryMB},
		{Key: "reserve_pids", Flag: "--reserve-pids", Value: cfg.ReservePids},
		{Key: "max_memory_overcommit", Flag: "--max-memory-overcommit", Value: cfg.MaxMemoryOvercommit},
		{Key: "max_pids_overcommit", Flag: "--max-pids-overcommit", Value: cfg.MaxPidsOvercommit},
		{Key: "max_cpu_overcommit", Flag: "--max-cpu-overcommit", Value: cfg.MaxCPUOvercommit},
		{Key: "tenant_quotas", Flag: "--tenant-max-sandboxes, --tenant-memory-mb, --tenant-cpu, --tenant-pids, --tenant-disk-mb and the other --tenant-* flags", Value: cfg.TenantQuotas},
		{Key: "max_file_bytes", Flag: "--max-file-bytes", Value: cfg.MaxFileBytes},
		{Key: "max_tar_bytes", Flag: "--max-tar-bytes", Value: cfg.MaxTarBytes},
		{Key: "max_image_bytes", Flag: "--max-image-bytes", Value: cfg.MaxImageBytes},
		{Key: "max_secret_bytes", Flag: "--max-secret-bytes", Value: cfg.MaxSecretBytes},
		{Key: "max_output_bytes", Flag: "--max-output-bytes", Value: cfg.MaxOutputBytes},
		{Key: "max_calls_per_sandbox", Flag: "--max-calls-per-sandbox", Value: cfg.MaxCallsPerSandbox},
		{Key: "max_conns_per_client", Flag: "--max-conns-per-client", Value: cfg.MaxConnsPerClient},
		{Key: "egress_allow_private", Flag: "--egress-allow-private", Value: prefixes(cfg.EgressAllowPrivate)},
		{Key: "registry_insecure", Flag: "--registry-insecure", Value: nonNil(cfg.RegistryInsecure)},
		{Key: "preview_domain", Flag: "--preview-domain", Value: cfg.PreviewDomain},
		{Key: "preview_url", Flag: "--preview-url", Value: cfg.PreviewURL},
		{Key: "providers", Flag: "--providers", Value: cfg.Providers},
		{Key: "event_retention_s", Flag: "--event-retention", Value: int64(cfg.EventRetention / time.Second)},
		{Key: "event_max_per_tenant", Flag: "--event-max-per-tenant", Value: cfg.EventMaxPerTenant},
	}
}

// prefixes are CIDRs as text, [] for none.
func prefixes(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// nonNil is s, or [] for none, so that JSON shows an empty list.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
