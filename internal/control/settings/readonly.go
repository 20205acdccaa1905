package settings

import (
	"net/netip"
	"time"

	"github.com/hutchdev/hutch/internal/server/config"
)

// Fixed is one of the server's settings that only a restart changes:
// shown in GET /v1/settings (read_only), refused by a PATCH (403
// setting_protected).
type Fixed struct {
	Key   string // its name in read_only
	Flag  string // the hutch serve flags that set it; "" when none does
	Value any    // as JSON encodes it
}

// ReadOnly is what cfg fixes that matters to an operator beside the
// settings: where hutch listens and keeps its state, what its sandboxes
// run on and may hold, what they may reach, where previews are served.
func ReadOnly(cfg config.Config) []Fixed {
	return []Fixed{
		{"listen", "--listen", cfg.Listen},
		{"data", "--data", cfg.DataDir},
		{"store", "--store", cfg.Store},
		{"driver", "--driver", cfg.Driver},
		{"log_level", "--log-level", cfg.LogLevel},
		{"warm_pool", "--warm-pool", cfg.WarmPool},
		{"default_template", "--default-template", cfg.DefaultTemplate},
		{"default_limits", "--default-memory-mb and --default-pids", cfg.DefaultLimits},
		{"max_limits", "", cfg.MaxLimits},
		{"tenant_quotas", "--tenant-max-sandboxes, --tenant-memory-mb, --tenant-cpu, --tenant-pids and --tenant-disk-mb", cfg.TenantQuotas},
		{"max_file_bytes", "--max-file-bytes", cfg.MaxFileBytes},
		{"max_tar_bytes", "--max-tar-bytes", cfg.MaxTarBytes},
		{"max_image_bytes", "--max-image-bytes", cfg.MaxImageBytes},
		{"max_secret_bytes", "--max-secret-bytes", cfg.MaxSecretBytes},
		{"max_output_bytes", "--max-output-bytes", cfg.MaxOutputBytes},
		{"max_calls_per_sandbox", "--max-calls-per-sandbox", cfg.MaxCallsPerSandbox},
		{"max_conns_per_client", "--max-conns-per-client", cfg.MaxConnsPerClient},
		{"egress_allow_private", "--egress-allow-private", prefixes(cfg.EgressAllowPrivate)},
		{"registry_insecure", "--registry-insecure", nonNil(cfg.RegistryInsecure)},
		{"preview_domain", "--preview-domain", cfg.PreviewDomain},
		{"preview_url", "--preview-url", cfg.PreviewURL},
		{"providers", "--providers", cfg.Providers},
		{"event_retention_s", "--event-retention", int64(cfg.EventRetention / time.Second)},
		{"event_max_per_tenant", "--event-max-per-tenant", cfg.EventMaxPerTenant},
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
