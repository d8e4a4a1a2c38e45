package flowtype

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Egress entries say where a connector may connect. One rule serves spec
// validation, the runtime's HTTP capability, certification, flow policies
// and pull policies:
//
//   - "api.example.com" is that host, on any port;
//   - "*.example.com" is any host below example.com (not example.com itself);
//   - "127.0.0.1", "[::1]" are IP addresses, likewise;
//   - any of them with ":PORT" ("localhost:18610", "[::1]:8443") is that
//     port only.
//
// Matching ignores case and a trailing dot in the host. A request's target
// is its URL's host with the scheme's default port when it has none
// (TargetOf), so "api.example.com:443" allows https://api.example.com/.
type EgressEntry struct {
	Wildcard bool   // *.host: hosts below Host
	Host     string // lowercase, no trailing dot; an IP in canonical form
	Port     string // "" for any port
}

var hostLabel = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// ParseEgress reads one entry.
func ParseEgress(s string) (EgressEntry, error) {
	var e EgressEntry
	rest := strings.ToLower(strings.TrimSpace(s))
	if r, ok := strings.CutPrefix(rest, "*."); ok {
		e.Wildcard, rest = true, r
	}
	host, port := rest, ""
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		host = rest[1 : len(rest)-1]
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return e, fmt.Errorf("egress %q: port %q is not 1-65535", s, port)
		}
	}
	host = strings.TrimSuffix(host, ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if e.Wildcard {
			return e, fmt.Errorf("egress %q: a wildcard needs a domain, not an IP address", s)
		}
		e.Host, e.Port = ip.Unmap().String(), port
		return e, nil
	}
	if !hostLabel.MatchString(host) {
		return e, fmt.Errorf("egress %q: want a host name such as api.example.com or *.example.com, or an IP address, with an optional :port", s)
	}
	e.Host, e.Port = host, port
	return e, nil
}

// String is the entry's canonical form.
func (e EgressEntry) String() string {
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if e.Wildcard {
		h = "*." + h
	}
	if e.Port != "" {
		h += ":" + e.Port
	}
	return h
}

// covers reports whether e admits every target that o admits.
func (e EgressEntry) covers(o EgressEntry) bool {
	if e.Port != "" && e.Port != o.Port {
		return false
	}
	switch {
	case !e.Wildcard:
		return !o.Wildcard && e.Host == o.Host
	case o.Wildcard:
		return o.Host == e.Host || strings.HasSuffix(o.Host, "."+e.Host)
	default:
		return strings.HasSuffix(o.Host, "."+e.Host)
	}
}

// EgressAllows reports whether an entry of allow admits target, a
// "host:port" (or "host") as TargetOf gives. Malformed entries admit
// nothing.
func EgressAllows(allow []string, target string) bool {
	t, err := ParseEgress(target)
	if err != nil || t.Wildcard {
		return false
	}
	for _, a := range allow {
		if e, err := ParseEgress(a); err == nil && e.covers(t) {
			return true
		}
	}
	return false
}

// EgressWithin reports whether everything entry admits, an allow entry
// admits too: a connector's egress within a flow's or a policy's.
func EgressWithin(entry string, allow []string) bool {
	t, err := ParseEgress(entry)
	if err != nil {
		return false
	}
	for _, a := range allow {
		if e, err := ParseEgress(a); err == nil && e.covers(t) {
			return true
		}
	}
	return false
}

// TargetOf is where a request to u connects: its host and port, the port
// being the scheme's default (80, 443) when u names none.
func TargetOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	if port == "" {
		return u.Hostname()
	}
	return net.JoinHostPort(u.Hostname(), port)
}
