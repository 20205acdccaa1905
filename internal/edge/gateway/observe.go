package gateway

// Observer is told of every call the gateway answers, refused ones
// included: the provider, "" when the call named none this server has
// (so a caller's path never becomes a label), and the status it got (499:
// the caller went away). Its method is called from the calls' requests and
// must return at once; internal/edge/telemetry's metrics are one.
type Observer interface {
	ObserveGatewayCall(provider string, status int)
}

func (g *Gateway) observe(c *call) {
	if g.cfg.Observer == nil {
		return
	}
	provider := c.provider
	if g.providers[provider] == nil {
		provider = ""
	}
	g.cfg.Observer.ObserveGatewayCall(provider, int(c.status.Load()))
}
