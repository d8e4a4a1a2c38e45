package flowtype

import (
	"net/url"
	"testing"
)

func TestEgressAllows(t *testing.T) {
	allow := []string{"api.stripe.com", "*.amazonaws.com", "localhost:18610", "127.0.0.1", "[::1]:8443"}
	for target, want := range map[string]bool{
		"api.stripe.com:443": true, "API.Stripe.com.:443": true, "evil-stripe.com:443": false,
		"s3.eu-west-1.amazonaws.com:443": true, "amazonaws.com:443": false, "amazonaws.com.evil:443": false,
		"localhost:18610": true, "localhost:18611": false, "localhost:80": false,
		"127.0.0.1:9": true, "[::1]:8443": true, "[::1]:443": false, "[::ffff:127.0.0.1]:5": true,
	} {
		if got := EgressAllows(allow, target); got != want {
			t.Errorf("EgressAllows(%s) = %v", target, got)
		}
	}
	for raw, want := range map[string]string{
		"https://api.stripe.com/v1": "api.stripe.com:443", "http://localhost:18610/x": "localhost:18610",
		"http://[::1]/": "[::1]:80",
	} {
		u, _ := url.Parse(raw)
		if got := TargetOf(u); got != want {
			t.Errorf("TargetOf(%s) = %s, want %s", raw, got, want)
		}
	}
}

func TestEgressWithin(t *testing.T) {
	allow := []string{"*.example.com", "api.stripe.com", "localhost:18610"}
	for entry, want := range map[string]bool{
		"api.example.com": true, "*.api.example.com": true, "*.example.com": true, "example.com": false,
		"api.stripe.com": true, "api.stripe.com:443": true, "*.stripe.com": false,
		"localhost:18610": true, "localhost": false, "localhost:1": false,
	} {
		if got := EgressWithin(entry, allow); got != want {
			t.Errorf("EgressWithin(%s) = %v", entry, got)
		}
	}
}

func TestParseEgress(t *testing.T) {
	for _, bad := range []string{"", "*.1.2.3.4", "a b", "host:0", "host:99999", "http://x", "*.", "x_y.com"} {
		if _, err := ParseEgress(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for in, canon := range map[string]string{"API.example.com.": "api.example.com", "*.Example.com:8080": "*.example.com:8080", "[::1]": "[::1]", "::1": "[::1]"} {
		e, err := ParseEgress(in)
		if err != nil || e.String() != canon {
			t.Errorf("%q: %v %v", in, e, err)
		}
	}
}
