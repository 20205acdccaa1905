package driver

import "github.com/hutchdev/hutch/api"

// ProxyEnv is the environment that sends a sandbox's connections through
// its egress proxy at proxyURL (http://host:port), with the sandbox's own
// loopback left direct, and points it at the provider gateway, which is
// served at the proxy's own address.
func ProxyEnv(proxyURL string) map[string]string {
	const noProxy = "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL, "http_proxy": proxyURL, "https_proxy": proxyURL,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
		api.EnvProviderURL: proxyURL + api.ProviderPath,
	}
}
