package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/hutchdev/hutch/internal/store"
)

// parseLabels adds each k=v of kvs to into (made if nil) and returns it.
func parseLabels(into map[string]string, kvs []string) (map[string]string, error) {
	if into == nil {
		into = map[string]string{}
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("node label %q: want key=value", kv)
		}
		into[k] = v
	}
	if len(into) > store.MaxNodeLabels {
		return nil, fmt.Errorf("node labels: at most %d", store.MaxNodeLabels)
	}
	return into, nil
}

// checkAdvertise refuses an advertised address that is not an http or
// https URL of a host, with no path beyond "/".
func checkAdvertise(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("advertise %q: want the base URL of this node's API, http://host:port or https://host:port", v)
	}
	return nil
}

// AdvertiseURL is the base URL other nodes reach this node's API at:
// Advertise, else http:// and the address the API listens on (addr, its
// port once bound). wildcard reports that the address is one no other
// machine can use as it is (a wildcard or loopback host), so a node on a
// shared store should set --advertise.
func (c Config) AdvertiseURL(addr string) (u string, wildcard bool) {
	if c.Advertise != "" {
		return strings.TrimSuffix(c.Advertise, "/"), false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr, true
	}
	ip := net.ParseIP(host)
	return "http://" + addr, host == "" || host == "localhost" || (ip != nil && (ip.IsUnspecified() || ip.IsLoopback()))
}
