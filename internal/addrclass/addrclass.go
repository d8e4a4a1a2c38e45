// Package addrclass says which network addresses and host names reach no
// service a connector may be allowed to call: loopback, private,
// link-local, shared, documentation, benchmarking, multicast, reserved and
// translation ranges, and the endpoints of cloud instance metadata. The
// ranges are IANA's special-purpose address registries (RFC 6890 and its
// updates).
package addrclass

import (
	"net/netip"
	"strings"
)

// special is one special-purpose range and what it is.
type special struct {
	prefix netip.Prefix
	what   string
}

var specials = func() []special {
	var out []special
	for _, s := range []struct{ prefix, what string }{
		{"0.0.0.0/8", `"this network"`},
		{"10.0.0.0/8", "a private network"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT; 100.100.100.200 is Alibaba Cloud's instance metadata)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (169.254.169.254 is cloud instance metadata)"},
		{"172.16.0.0/12", "a private network"},
		{"192.0.0.0/24", "IETF protocol assignments (192.0.0.192 is Oracle Cloud's instance metadata)"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "a 6to4 relay"},
		{"192.168.0.0/16", "a private network"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "the unspecified address"},
		{"::1/128", "loopback"},
		{"64:ff9b::/96", "IPv4/IPv6 translation, which reaches an IPv4 address"},
		{"64:ff9b:1::/48", "IPv4/IPv6 translation, which reaches an IPv4 address"},
		{"100::/64", "discard"},
		{"2001::/23", "IETF protocol assignments"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4, which reaches an IPv4 address"},
		{"3fff::/20", "documentation"},
		{"fc00::/7", "a unique local network (fd00:ec2::254 is AWS's instance metadata)"},
		{"fe80::/10", "link-local"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, special{netip.MustParsePrefix(s.prefix), s.what})
	}
	return out
}()

// Special says what ip is when it is not a public unicast address: "" for
// one a connector may be allowed to reach. An IPv4 address mapped into
// IPv6 is judged as the IPv4 address.
func Special(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, s := range specials {
		if s.prefix.Contains(ip) {
			return s.what
		}
	}
	return ""
}

// globalIPv6 is IPv6's global unicast allocation: every other IPv6
// address (the IPv4-compatible ::/96 among them) is no public host.
var globalIPv6 = netip.MustParsePrefix("2000::/3")

// Public reports whether ip is a public unicast address, by allowlist:
// global unicast (IPv6 within 2000::/3) and in none of the special-purpose
// ranges, so that forms that embed an IPv4 address (mapped, translated,
// 6to4) are judged by what they reach, and any range this package does
// not know is refused rather than allowed.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() || Special(ip) != "" {
		return false
	}
	return ip.Is4() || globalIPv6.Contains(ip)
}

// SpecialName says what a host name reaches by convention when that is
// this machine or its cloud's instance metadata ("" otherwise): localhost
// and the names below it, and the metadata names of the major clouds. The
// name is compared without case and trailing dot.
func SpecialName(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain":
		return "loopback (localhost)"
	case h == "metadata" || h == "metadata.google.internal" || h == "metadata.goog" || h == "instance-data" || strings.HasPrefix(h, "instance-data."):
		return "cloud instance metadata"
	}
	return ""
}

// local are the destinations a name may never resolve to for a
// connector, even where private networks are fine: this machine, its
// links, and the instance metadata of the clouds it may run in.
var local = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{"0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32",
		"100.100.100.200/32", "192.0.0.192/32", "::/128", "::1/128", "fe80::/10", "ff00::/8", "fd00:ec2::254/128"} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// Local says what ip is when it is this machine, a link of it (link-local,
// multicast) or a cloud's instance metadata: what no request of a
// connector may connect to, whatever name it asked for ("" otherwise).
// Private networks are not local: a provider's host name may resolve into
// one.
func Local(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range local {
		if p.Contains(ip) {
			return Special(ip)
		}
	}
	return ""
}
