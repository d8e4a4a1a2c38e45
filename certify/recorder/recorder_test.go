package recorder

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// post sends one protocol request to the session as the harness would.
func post[T any](t *testing.T, s *Session, path string, in any) T {
	t.Helper()
	b, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b)))
	var out T
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func exchanges(t *testing.T, js string) []httpfixture.Exchange {
	t.Helper()
	var ex []httpfixture.Exchange
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func allow(hosts ...string) func(string) bool {
	return func(target string) bool { return flowtype.EgressAllows(hosts, target) }
}

// TestEffectsAreCountedByTheRecorder: writes count against the running
// delivery's key, repeats that change nothing do not, and reads never.
func TestEffectsAreCountedByTheRecorder(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	rec := exchanges(t, `[{"request": {"method": "POST", "url": "https://api.example.com/charges"}, "response": {"status": 200, "body": {"id": "ch_1"}}},
		{"request": {"method": "GET", "url": "https://api.example.com/charges/ch_1"}, "response": {"status": 200}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec},
		{Delivery: wire.Delivery{ID: 2, Key: "k2"}, Exchanges: rec},
	}}
	charge := func(idem string) wire.HTTPResponse {
		h := map[string][]string{}
		if idem != "" {
			h["Idempotency-Key"] = []string{idem}
		}
		return post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "POST", URL: "https://api.example.com/charges", Header: h})
	}
	if r := charge("a"); r.Status != 200 || string(r.Body) != `{"id":"ch_1"}` {
		t.Fatalf("answer: %+v", r)
	}
	charge("a") // the provider applies a key once
	post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/charges/ch_1"})
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "x", Value: []byte("1")})
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "x", Value: []byte("1")}) // no change
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 1, Output: json.RawMessage(`{}`)})
	// Now delivery 2 runs: a charge without a key is always new.
	charge("")
	charge("")
	post[struct{}](t, s, wire.PathBlobWrite, wire.BlobRequest{Name: "b", Data: []byte("pdf")})
	if got := w.Effects(); got["k1"] != 2 || got["k2"] != 3 {
		t.Fatalf("effects %v, want k1 2 (charge, kv) and k2 3 (two charges, blob)", got)
	}
	if v := w.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}

// TestDedupeValueMustCarryTheKey: a write the provider deduplicates on a
// value the world's CarriesKey does not bind to the delivery's key is a
// violation, named by endpoint and header, never by the value.
func TestDedupeValueMustCarryTheKey(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	var asked []string
	w.CarriesKey = func(key string, input []byte, value string, _ int) bool {
		asked = append(asked, key+" "+string(input)+" "+value)
		return strings.Contains(value, key)
	}
	rec := exchanges(t, `[{"request": {"method": "POST", "url": "https://api.example.com/charges"}, "response": {"status": 200}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 1, Key: "key-one", Input: json.RawMessage(`{"o":1}`)}, Exchanges: rec},
	}}
	for _, idem := range []string{"x-key-one", "key"} {
		post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "POST", URL: "https://api.example.com/charges?x=1",
			Header: map[string][]string{"Idempotency-Key": {idem}}})
	}
	// A read carries no effect, whatever its headers.
	post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/charges",
		Header: map[string][]string{"Idempotency-Key": {"k"}}})
	if want := []string{`key-one {"o":1} x-key-one`, `key-one {"o":1} key`}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Fatalf("CarriesKey asked %q, want %q", asked, want)
	}
	v := w.Violations()
	if len(v) != 1 || !strings.Contains(v[0], "a write to api.example.com:443/charges is deduplicated on its Idempotency-Key header, a 3-character value") {
		t.Fatalf("violations %q", v)
	}
}

// TestDedupeValueHasOneKey: a dedupe value sent by one key and then by
// another is a violation, whatever binding the values show: the provider
// would take the second write for a repeat of the first.
func TestDedupeValueHasOneKey(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	w.CarriesKey = func(string, []byte, string, int) bool { return true }
	rec := exchanges(t, `[{"request": {"method": "POST", "url": "https://api.example.com/charges"}, "response": {"status": 200}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec},
		{Delivery: wire.Delivery{ID: 2, Key: "k2"}, Exchanges: rec},
	}}
	charge := func(idem string) {
		post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "POST", URL: "https://api.example.com/charges", Header: map[string][]string{"Idempotency-Key": {idem}}})
	}
	charge("o-0.o-1")
	charge("o-0.o-1") // the same key again: a repeat, fine
	if v := w.Violations(); len(v) != 0 {
		t.Fatalf("one key repeating its value: %q", v)
	}
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 1, Output: json.RawMessage(`{}`)})
	charge("o-0.o-1") // delivery 2, another key
	if v := w.Violations(); len(v) != 1 || !strings.Contains(v[0], "a value that an activation with another key sent too") {
		t.Fatalf("violations %q", v)
	}
}

// TestCassetteRefusesWhatTheFixtureDidNotRecord: in order, byte for
// byte; a mismatch and an unused exchange are each a problem.
func TestCassetteRefusesWhatTheFixtureDidNotRecord(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	s := &Session{World: w, Mode: Cassette, Concurrency: 1, Deliveries: []Planned{{
		Delivery: wire.Delivery{ID: 7, Key: "kk"},
		Exchanges: exchanges(t, `[{"request": {"method": "PUT", "url": "https://api.example.com/o/{{idempotency_key}}", "body": "a"}, "response": {"status": 204}},
			{"request": {"method": "GET", "url": "https://api.example.com/o/kk"}, "response": {"status": 200}}]`),
	}}}
	r := post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "PUT", URL: "https://api.example.com/o/kk", Body: []byte("b")})
	if !strings.Contains(r.Refused, `body: recorded "a", sent "b"`) {
		t.Fatalf("mismatch answered %+v", r)
	}
	out := s.Outcome()
	if len(out.Problems[7]) != 1 {
		t.Fatalf("problems %v", out.Problems)
	}
	// Only one of two was requested: the second is reported unused when
	// nothing else went wrong.
	s2 := &Session{World: w, Mode: Cassette, Concurrency: 1, Deliveries: s.Deliveries}
	post[wire.HTTPResponse](t, s2, wire.PathHTTP, wire.HTTPRequest{Method: "PUT", URL: "https://api.example.com/o/kk", Body: []byte("a")})
	if p := s2.Outcome().Problems[7]; len(p) != 1 || !strings.Contains(p[0], "1 recorded exchange(s) never requested, starting with GET https://api.example.com/o/kk") {
		t.Fatalf("unused: %v", p)
	}
}

// TestViolations: egress outside the allowlist is refused and recorded;
// a read-only connector's writes are recorded whatever they are.
func TestViolations(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	w.ReadOnly = true
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{{Delivery: wire.Delivery{ID: 1, Key: "k"},
		Exchanges: exchanges(t, `[{"request": {"method": "POST", "url": "https://api.example.com/x"}, "response": {"status": 200}}]`)}}}
	r := post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://evil.example/steal"})
	if !strings.Contains(r.Refused, "egress to evil.example:443 is not allowed") {
		t.Fatalf("egress answered %+v", r)
	}
	post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/x",
		Header: map[string][]string{"X-HTTP-Method-Override": {"POST"}}}) // as written, not canonical
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "x", Value: []byte("1")})
	v := strings.Join(w.Violations(), "\n")
	for _, want := range []string{"request to evil.example:443", "a write (POST https://api.example.com/x) from a connector that may only read", "a KV write (x)"} {
		if !strings.Contains(v, want) {
			t.Errorf("violations %q lack %q", v, want)
		}
	}
}

// TestProtocolViolations: results the harness could forge to shape
// attribution are refused and recorded.
func TestProtocolViolations(t *testing.T) {
	s := &Session{World: NewWorld(t0, nil), Concurrency: 1, Deliveries: []Planned{{Delivery: wire.Delivery{ID: 1, Key: "a"}}, {Delivery: wire.Delivery{ID: 2, Key: "b"}}}}
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 2})
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 9})
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 1})
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 1})
	out := s.Outcome()
	want := []string{"a result for delivery 2 while delivery 1 was running", "a result for delivery 9, which was never given", "a second result for delivery 1"}
	if strings.Join(out.Protocol, "\n") != strings.Join(want, "\n") {
		t.Fatalf("protocol %q", out.Protocol)
	}
	if _, ok := out.Results[2]; ok || len(out.Results) != 1 {
		t.Fatalf("results %v", out.Results)
	}
}

// TestDedupeFollowsTheWorldClock: a key is present until its TTL runs out
// on the recorder's clock, never the harness's.
func TestDedupeFollowsTheWorldClock(t *testing.T) {
	w := NewWorld(t0, nil)
	s := &Session{World: w, Concurrency: 1, Deliveries: []Planned{{Delivery: wire.Delivery{ID: 1, Key: "a"}}}}
	first := post[wire.DedupeResponse](t, s, wire.PathDedupe, wire.DedupeRequest{Key: "k", TTL: time.Hour})
	again := post[wire.DedupeResponse](t, s, wire.PathDedupe, wire.DedupeRequest{Key: "k", TTL: time.Hour})
	w.SetNow(t0.Add(2 * time.Hour))
	later := post[wire.DedupeResponse](t, s, wire.PathDedupe, wire.DedupeRequest{Key: "k", TTL: time.Hour})
	if !first.Absent || again.Absent || !later.Absent {
		t.Fatalf("dedupe: %v %v %v", first, again, later)
	}
}

// TestTheProviderClockFollowsTheDelivery: an answer's Date is the time
// the delivery's clock read as the request left, as a live provider's
// follows the real time (the world's clock when the request names none),
// and a world whose clock moved past a delivery's logical time calls it
// that much later.
func TestTheProviderClockFollowsTheDelivery(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	rec := exchanges(t, `[{"request": {"method": "GET", "url": "https://api.example.com/balance"}, "response": {"status": 200, "body": {"balance": 1}}}]`)
	clock := t0.Add(3*time.Second + 200*time.Millisecond)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 1, Key: "k1", Now: t0, Clock: clock}, Exchanges: rec},
		{Delivery: wire.Delivery{ID: 2, Key: "k2", Now: t0}, Exchanges: rec},
	}}
	date := func(sent time.Time) string {
		r := post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/balance", Clock: sent})
		return r.Header["Date"][0]
	}
	if got, want := date(clock), clock.Format(http.TimeFormat); got != want {
		t.Errorf("Date %q, want the request's clock %q", got, want)
	}
	if got, want := date(time.Time{}), t0.Format(http.TimeFormat); got != want {
		t.Errorf("Date %q, want the world's clock %q", got, want)
	}

	w.SetNow(t0.Add(12 * time.Hour))
	work := s.work()
	if got, want := work.Deliveries[0].Clock, clock.Add(12*time.Hour); !got.Equal(want) {
		t.Errorf("late delivery's clock %s, want %s", got, want)
	}
	if got := work.Deliveries[1].Clock; !got.IsZero() {
		t.Errorf("a pinned delivery's clock moved to %s", got)
	}
}

// TestTokenRequestsAreNoEffects: a token request to the declared endpoint
// is a read, even from a connector that may only read; caching the token
// it issued in the declared KV entry is no effect, once per token issued,
// while anything else written there, a second write without a new token,
// or a POST there that names no grant_type, is one.
func TestTokenRequestsAreNoEffects(t *testing.T) {
	w := NewWorld(t0, allow("login.example.com", "api.example.com"))
	w.Token = httpfixture.TokenEndpoint{URL: "https://login.example.com/oauth2/token", Cache: "oauth/*"}
	rec := exchanges(t, `[{"request": {"method": "POST", "url": "https://login.example.com/oauth2/token"}, "response": {"status": 200, "body": {"access_token": "tok-3f9a", "expires_in": 3600}}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec}}}
	form := map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}
	ask := func(body string) {
		post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "POST", URL: "https://login.example.com/oauth2/token", Header: form, Body: []byte(body)})
	}
	ask("grant_type=client_credentials&client_id=c")
	ask("grant_type=client_credentials&client_id=c")
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "oauth/c", Value: []byte(`{"token":"tok-3f9a"}`)})
	if got := w.Effects()["k1"]; got != 0 {
		t.Fatalf("token requests and caching the token took %d effects", got)
	}
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "oauth/c", Value: []byte(`{"orders":["o-1"]}`)})
	if got := w.Effects()["k1"]; got != 1 {
		t.Errorf("another value in the token cache took %d effects, want 1", got)
	}
	// Two token requests, two writes of the token that are no effects.
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "oauth/c", Value: []byte(`{"token":"tok-3f9a","n":2}`)})
	post[struct{}](t, s, wire.PathKVPut, wire.KVRequest{Key: "oauth/c", Value: []byte(`{"token":"tok-3f9a","n":3}`)})
	if got := w.Effects()["k1"]; got != 2 {
		t.Errorf("a third write beside the token after two token requests took %d effects in all, want 2", got)
	}
	ask("amount=100")
	if got := w.Effects()["k1"]; got != 3 {
		t.Errorf("a POST to the token endpoint without a grant_type took %d effects in all, want 3", got)
	}

	ro := NewWorld(t0, allow("login.example.com"))
	ro.ReadOnly, ro.Token = true, w.Token
	s = &Session{World: ro, Mode: Provider, Concurrency: 1, Deliveries: []Planned{{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec}}}
	ask("grant_type=client_credentials")
	if v := ro.Violations(); len(v) != 0 {
		t.Errorf("a token request from a connector that only reads: %v", v)
	}
}

// TestProviderAnswersARepeatedRequestAsRecorded: a request a recording
// answers twice (a 429, then the success) gets each answer in turn and
// the last from then on, within each delivery, as a live provider gives.
func TestProviderAnswersARepeatedRequestAsRecorded(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	rec := exchanges(t, `[{"request": {"method": "GET", "url": "https://api.example.com/invoices"}, "response": {"status": 429, "headers": {"Retry-After": "1"}}},
		{"request": {"method": "GET", "url": "https://api.example.com/invoices"}, "response": {"status": 200, "body": {"data": []}}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 1, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec},
		{Delivery: wire.Delivery{ID: 2, Key: "k1"}, Exchanges: rec},
	}}
	list := func() int {
		return post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/invoices"}).Status
	}
	if a, b, c := list(), list(), list(); a != 429 || b != 200 || c != 200 {
		t.Errorf("delivery 1 got %d, %d, %d; want 429, 200, 200", a, b, c)
	}
	post[struct{}](t, s, wire.PathResult, wire.Result{ID: 1, Output: json.RawMessage(`{}`)})
	if a, b := list(), list(); a != 429 || b != 200 {
		t.Errorf("delivery 2 got %d, %d; want 429, 200 (its own recording, from the start)", a, b)
	}
}

// TestConcurrentCopiesEachGetTheirAnswers: requests that name their
// delivery are answered from its own turn through the recording, however
// the copies of a burst interleave.
func TestConcurrentCopiesEachGetTheirAnswers(t *testing.T) {
	w := NewWorld(t0, allow("api.example.com"))
	rec := exchanges(t, `[{"request": {"method": "GET", "url": "https://api.example.com/invoices"}, "response": {"status": 401}},
		{"request": {"method": "GET", "url": "https://api.example.com/invoices"}, "response": {"status": 200}}]`)
	s := &Session{World: w, Mode: Provider, Concurrency: 2, Deliveries: []Planned{
		{Delivery: wire.Delivery{ID: 0, Key: "k1"}, Exchanges: rec},
		{Delivery: wire.Delivery{ID: 1, Key: "k1"}, Exchanges: rec},
	}}
	list := func(delivery int) int {
		return post[wire.HTTPResponse](t, s, wire.PathHTTP, wire.HTTPRequest{Method: "GET", URL: "https://api.example.com/invoices", Delivery: delivery + 1}).Status
	}
	if a, b, c, d := list(0), list(1), list(1), list(0); a != 401 || b != 401 || c != 200 || d != 200 {
		t.Errorf("interleaved copies got %d, %d, %d, %d; want 401, 401, 200, 200", a, b, c, d)
	}
}
