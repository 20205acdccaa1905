package api

// ProviderPath is where the provider gateway serves: a call to provider p
// is <gateway>/provider/v1/p/<the provider's own path>. Inside a sandbox
// the gateway is at $HUTCH_PROVIDER_URL, and the sandbox's token, to send
// where the provider's SDK sends its API key, is $HUTCH_PROVIDER_TOKEN.
const (
	ProviderPath     = "/provider/v1"
	EnvProviderURL   = "HUTCH_PROVIDER_URL"
	EnvProviderToken = "HUTCH_PROVIDER_TOKEN"
)

// EventProviderCall records one call through the provider gateway: the
// provider, method, path, status, bytes each way and latency (never the
// key), and for a call the gateway refused, the code it refused with.
const EventProviderCall = "provider.call"
