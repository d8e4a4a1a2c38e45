package addrclass

import (
	"net/netip"
	"testing"
)

func TestSpecial(t *testing.T) {
	for addr, special := range map[string]bool{
		"169.254.169.254": true, "127.0.0.1": true, "10.1.2.3": true, "172.20.0.1": true, "192.168.1.1": true,
		"100.100.100.200": true, "0.0.0.0": true, "224.0.0.1": true, "255.255.255.255": true, "198.18.0.1": true,
		"::1": true, "::": true, "fe80::1": true, "fd00:ec2::254": true, "::ffff:127.0.0.1": true, "::ffff:169.254.169.254": true,
		"64:ff9b::a9fe:a9fe": true, "2002:a9fe:a9fe::": true, "2001:db8::1": true, "ff02::1": true,
		"93.184.216.34": false, "8.8.8.8": false, "1.1.1.1": false, "2606:4700:4700::1111": false, "::ffff:8.8.8.8": false,
	} {
		if got := Special(netip.MustParseAddr(addr)) != ""; got != special {
			t.Errorf("Special(%s) = %q, want special %v", addr, Special(netip.MustParseAddr(addr)), special)
		}
	}
}

func TestSpecialName(t *testing.T) {
	for name, special := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "api.localhost": true, "metadata.google.internal": true, "metadata": true,
		"instance-data.ec2.internal": true, "api.stripe.com": false, "orders-db.internal.example": false, "localhost.example.com": false,
	} {
		if got := SpecialName(name) != ""; got != special {
			t.Errorf("SpecialName(%s) = %q, want special %v", name, SpecialName(name), special)
		}
	}
}

func TestLocal(t *testing.T) {
	for addr, local := range map[string]bool{
		"169.254.169.254": true, "127.0.0.1": true, "::1": true, "fe80::1": true, "fd00:ec2::254": true, "100.100.100.200": true,
		"::ffff:127.0.0.1": true, "0.0.0.0": true, "10.1.2.3": false, "192.168.1.1": false, "fd12::1": false, "8.8.8.8": false,
	} {
		if got := Local(netip.MustParseAddr(addr)) != ""; got != local {
			t.Errorf("Local(%s) = %q, want local %v", addr, Local(netip.MustParseAddr(addr)), local)
		}
	}
}

// TestPublic: an allowlist: public unicast in, every special-purpose
// range and every IPv6 outside global unicast out, embedded IPv4 forms
// judged by the IPv4 address.
func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:2800:21f:cb07:6820:80da:af6b:8b2c": true, "::ffff:93.184.215.14": true,
		"100.64.0.1": false, "100.100.100.200": false, "192.0.0.192": false, "198.18.0.1": false, "240.0.0.1": false,
		"255.255.255.255": false, "0.0.0.0": false, "10.1.2.3": false, "169.254.169.254": false, "224.0.0.1": false,
		"::ffff:169.254.169.254": false, "::a9fe:a9fe": false, "64:ff9b::a9fe:a9fe": false, "2002:a9fe:a9fe::1": false,
		"fd00:ec2::254": false, "100::1": false, "2001:db8::1": false, "::1": false, "::": false, "fe80::1": false,
		"4000::1": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}
