package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// ConnectRoute sends the requests meant for Host (an egress entry:
// "api.stripe.com", "api.example.com:8443") to Target (scheme://host:port)
// instead.
type ConnectRoute struct {
	Host   string
	Target *url.URL
}

// ParseConnectTo reads routes written HOST=URL[,HOST=URL...], the form of
// FLOWGEN_CONNECT_TO: "api.stripe.com=http://127.0.0.1:18610".
func ParseConnectTo(s string) ([]ConnectRoute, error) {
	var routes []ConnectRoute
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		host, target, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("connect-to %q: want HOST=URL", part)
		}
		if _, err := flowtype.ParseEgress(host); err != nil || strings.Contains(host, "*") {
			return nil, fmt.Errorf("connect-to %q: %q is not a host or host:port", part, host)
		}
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("connect-to %q: %q is not an http(s)://host:port URL", part, target)
		}
		routes = append(routes, ConnectRoute{Host: host, Target: &url.URL{Scheme: u.Scheme, Host: u.Host}})
	}
	return routes, nil
}

// ConnectTo is a transport that connects the requests for some hosts to
// other addresses, the way curl's --connect-to does: a local stand-in for
// a real API, with neither the connector nor its egress allowlist edited.
// The allowlist is checked against the host the connector asked for, so a
// route can only redirect traffic the connector was allowed to send. The
// request keeps its Host header.
type ConnectTo struct {
	// Base carries the requests; when nil, routed requests go over
	// http.DefaultTransport (the operator chose where they go, a local
	// stand-in often) and the others over PublicTransport.
	Base   http.RoundTripper
	Routes []ConnectRoute
}

// RoundTrip implements http.RoundTripper.
func (c *ConnectTo) RoundTrip(req *http.Request) (*http.Response, error) {
	routed, public := c.Base, c.Base
	if c.Base == nil {
		routed, public = http.DefaultTransport, PublicTransport
	}
	target := flowtype.TargetOf(req.URL)
	for _, r := range c.Routes {
		if flowtype.EgressAllows([]string{r.Host}, target) {
			out := req.Clone(req.Context())
			out.Host = req.URL.Host
			u := *req.URL
			u.Scheme, u.Host = r.Target.Scheme, r.Target.Host
			out.URL = &u
			return routed.RoundTrip(out)
		}
	}
	return public.RoundTrip(req)
}
