package httpfixture

import (
	"net/http"
	"strings"
	"testing"
)

// TestDedupeValueOnlyFromUnambiguousRequests: the dedupe value is read
// where every parser reads it alike; a request a provider could read
// another way carries none, so each copy of it counts as an effect, and
// Ambiguity says why.
func TestDedupeValueOnlyFromUnambiguousRequests(t *testing.T) {
	header := []Dedupe{{Method: "POST", Path: "/v1/charges*", Header: "Idempotency-Key"}}
	body := []Dedupe{{Method: "POST", Path: "/v2/payments", BodyField: "payment.idempotency_key"}}
	key := func(v ...string) http.Header { return http.Header{"Idempotency-Key": v} }
	jsonCT := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	const pay = "https://p.example/v2/payments"
	const charge = "https://p.example/v1/charges"
	for _, tc := range []struct {
		name     string
		contract []Dedupe
		url      string
		header   http.Header
		body     string
		want     string
		why      string // what Ambiguity says
	}{
		{"one header line", header, charge, key("k1"), "", "k1", ""},
		{"header name in another case", header, charge, http.Header{"idempotency-key": {"k1"}}, "", "k1", ""},
		{"spaces around the value are the client's", header, charge, key(" k1 "), "", "k1", ""},
		{"two header lines", header, charge, key("k1", "k2"), "", "", "header on 2 lines"},
		{"two header names differing in case", header, charge, http.Header{"Idempotency-Key": {"k1"}, "IDEMPOTENCY-KEY": {"k2"}}, "", "", "header on 2 lines"},
		{"a header name matching by Unicode folding", header, charge, http.Header{"Idempotency-\u212aey": {"k1"}}, "", "", "letters beyond ASCII"},
		{"a list in one line", header, charge, key("fixed, k1"), "", "", "commas"},
		{"a value beyond visible ASCII", header, charge, key("k1\u00e9"), "", "", "beyond visible ASCII"},
		{"a value too long", header, charge, key(strings.Repeat("z", 300)), "", "", "300 characters long"},
		{"a method override", header, charge, http.Header{"Idempotency-Key": {"k1"}, "X-HTTP-Method-Override": {"PATCH"}}, "", "", "method override"},
		{"dot segments", header, "https://p.example/v1/charges/../refunds", key("k1"), "", "", "not in normal form"},
		{"empty segment", header, "https://p.example/v1/charges//x", key("k1"), "", "", "not in normal form"},
		{"escaped path", header, "https://p.example/v1/charges%2F..%2Frefunds", key("k1"), "", "", "not in normal form"},
		{"trailing slash is still normal", header, "https://p.example/v1/charges/", key("k1"), "", "k1", ""},
		{"body field", body, pay, jsonCT, `{"payment":{"amount":5,"idempotency_key":"k1"},"note":[1,{"a":null}]}`, "k1", ""},
		{"body not declared JSON", body, pay, nil, `{"payment":{"idempotency_key":"k1"}}`, "", "not declared JSON"},
		{"body field twice", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1","idempotency_key":"k2"}}`, "", "more than once"},
		{"body field in another case too", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1","Idempotency_Key":"k2"}}`, "", "more than once"},
		{"body field with a dotless i too", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1","\u0131dempotency_key":"k2"}}`, "", "more than once"},
		{"escaped body field name", body, pay, jsonCT, `{"payment":{"idempotency\u005fkey":"k1","idempotency_key":"k2"}}`, "", "more than once"},
		{"parent object twice", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1"},"payment":{"idempotency_key":"k2"}}`, "", "more than once"},
		{"only another case", body, pay, jsonCT, `{"payment":{"Idempotency_Key":"k1"}}`, "", "spells the payment.idempotency_key field otherwise"},
		{"a lone surrogate", body, pay, jsonCT, `{"payment":{"idempotency_key":"k\ud800"}}`, "", "beyond visible ASCII"},
		{"a number", body, pay, jsonCT, `{"payment":{"idempotency_key":7}}`, "", ""},
		{"two documents", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1"}} {"x":1}`, "", "more than one JSON value"},
		{"trailing garbage", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1"}}]`, "", "more than one JSON value"},
		{"malformed", body, pay, jsonCT, `{"payment":{"idempotency_key":"k1"`, "", ""},
		{"too deep", body, pay, jsonCT, `{"x":` + strings.Repeat("[", 100000) + `{"payment":{"idempotency_key":"k1"}}`, "", ""},
		{"duplicates off the path are fine", body, pay, jsonCT, `{"note":1,"note":2,"payment":{"idempotency_key":"k1"}}`, "k1", ""},
	} {
		p := &Provider{Contract: tc.contract}
		r := p.Read("POST", tc.url, tc.header, []byte(tc.body))
		if got := r.Value; got != tc.want {
			t.Errorf("%s: dedupe value %q, want %q", tc.name, got, tc.want)
		}
		if why := r.Ambiguity; tc.why == "" && why != "" || !strings.Contains(why, tc.why) {
			t.Errorf("%s: Ambiguity says %q, want %q", tc.name, why, tc.why)
		}
		first := p.Apply("POST", tc.url, tc.header, []byte(tc.body))
		second := p.Apply("POST", tc.url, tc.header, []byte(tc.body))
		if !first || second != (tc.want == "") {
			t.Errorf("%s: two copies applied %v, %v; want the second an effect only without a dedupe value", tc.name, first, second)
		}
	}
}

// TestDedupeValueIsScopedToItsEndpoint: one value sent to two hosts, two
// methods or two paths is two effects; sent again to the same endpoint,
// none.
func TestDedupeValueIsScopedToItsEndpoint(t *testing.T) {
	p := &Provider{}
	h := http.Header{"Idempotency-Key": {"k1"}}
	for i, w := range []struct {
		method, url string
		want        bool
	}{
		{"POST", "https://a.example/v1/charges", true},
		{"POST", "https://b.example/v1/refunds", true},
		{"PATCH", "https://a.example/v1/charges", true},
		{"POST", "https://a.example/v1/charges/ch_1/capture", true},
		{"POST", "https://a.example/v1/charges", false},
	} {
		if got := p.Apply(w.method, w.url, h, nil); got != w.want {
			t.Errorf("write %d (%s %s): effect %v, want %v", i, w.method, w.url, got, w.want)
		}
	}
}
