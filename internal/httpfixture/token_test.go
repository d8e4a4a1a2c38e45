package httpfixture

import (
	"net/http"
	"testing"
)

// TestTokenEndpointAsks: only a POST to the declared endpoint whose form
// or JSON body names a grant_type is a token request; the same endpoint
// asked anything else, another path, a method override or a grant_type
// in the query alone is not.
func TestTokenEndpointAsks(t *testing.T) {
	te := TokenEndpoint{URL: "https://login.example.com/oauth2/token"}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	js := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, c := range []struct {
		name, method, url string
		header            http.Header
		body              string
		want              bool
	}{
		{"client credentials, form", "POST", "https://login.example.com/oauth2/token", form, "grant_type=client_credentials&scope=crm", true},
		{"refresh, JSON", "post", "https://LOGIN.example.com/oauth2/token?tenant=t1", js, `{"grant_type":"refresh_token","refresh_token":"r"}`, true},
		{"no grant_type", "POST", "https://login.example.com/oauth2/token", form, "amount=100", false},
		{"grant_type twice", "POST", "https://login.example.com/oauth2/token", form, "grant_type=a&grant_type=b", false},
		{"grant_type in the query only", "POST", "https://login.example.com/oauth2/token?grant_type=client_credentials", form, "amount=100", false},
		{"another path", "POST", "https://login.example.com/oauth2/charges", form, "grant_type=client_credentials", false},
		{"another host", "POST", "https://api.example.com/oauth2/token", form, "grant_type=client_credentials", false},
		{"plain http", "POST", "http://login.example.com/oauth2/token", form, "grant_type=client_credentials", false},
		{"a PUT", "PUT", "https://login.example.com/oauth2/token", form, "grant_type=client_credentials", false},
		{"a method override", "POST", "https://login.example.com/oauth2/token", http.Header{"Content-Type": form["Content-Type"], "X-Http-Method-Override": {"DELETE"}}, "grant_type=client_credentials", false},
		{"a body of another type", "POST", "https://login.example.com/oauth2/token", http.Header{"Content-Type": {"text/plain"}}, "grant_type=client_credentials", false},
	} {
		if got := te.Asks(c.method, c.url, c.header, []byte(c.body)); got != c.want {
			t.Errorf("%s: Asks = %v, want %v", c.name, got, c.want)
		}
	}
	if (TokenEndpoint{}).Asks("POST", "https://login.example.com/oauth2/token", form, []byte("grant_type=client_credentials")) {
		t.Error("no endpoint declared, yet a token request was recognised")
	}
	cache := TokenEndpoint{Cache: "oauth/token/*"}
	if !cache.Caches("oauth/token/t1") || cache.Caches("oauth/other") || (TokenEndpoint{Cache: "tok"}).Caches("tok2") {
		t.Error("Caches matches the wrong entries")
	}
}
