package fixturetest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/runtime"
)

func recording(t *testing.T, js string) []httpfixture.Exchange {
	t.Helper()
	var ex []httpfixture.Exchange
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func send(c *cassette, method, url, body string, header http.Header) error {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	_, err := c.RoundTrip(req)
	return err
}

func TestCassetteReportsEveryDifference(t *testing.T) {
	c := &cassette{key: "k1", exchanges: recording(t, `[
		{"request": {"method": "POST", "url": "https://a.example/x", "headers": {"Idempotency-Key": "{{idempotency_key}}"}, "body": {"n": 1, "s": "a"}},
		 "response": {"status": 200, "body": {"ok": true}}},
		{"request": {"method": "GET", "url": "https://a.example/y", "body": "raw=1"}, "response": {"status": 204}},
		{"request": {"method": "GET", "url": "https://a.example/z"}, "response": {"status": 200}}]`)}
	if err := send(c, "POST", "https://a.example/x", `{"s":"a","n":1}`, http.Header{"Idempotency-Key": {"k1"}}); err != nil {
		t.Fatalf("matching request refused: %v", err)
	}
	err := send(c, "PUT", "https://a.example/q", "raw=2", nil)
	if runtime.KindOf(err) != runtime.Permanent {
		t.Errorf("mismatch is not Permanent: %v", err)
	}
	got := strings.Join(c.problems(), "\n")
	for _, want := range []string{"method: recorded GET, sent PUT", "url: recorded https://a.example/y, sent https://a.example/q", `body: recorded "raw=1", sent "raw=2"`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not mention %q:\n%s", want, got)
		}
	}

	c = &cassette{key: "k1", exchanges: recording(t, `[
		{"request": {"method": "POST", "url": "https://a.example/x", "headers": {"Idempotency-Key": "{{idempotency_key}}"}, "body": {"n": 1}},
		 "response": {"status": 200}}, {"request": {"method": "GET", "url": "https://a.example/z"}, "response": {"status": 200}}]`)}
	send(c, "POST", "https://a.example/x", `{"n":2}`, http.Header{"Idempotency-Key": {"other"}})
	got = strings.Join(c.problems(), "\n")
	for _, want := range []string{`header Idempotency-Key: recorded "k1", sent "other"`, `"n": 1`, `"n": 2`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not mention %q:\n%s", want, got)
		}
	}

	c = &cassette{exchanges: recording(t, `[{"request": {"method": "GET", "url": "https://a.example/z"}, "response": {"status": 200}},
		{"request": {"method": "GET", "url": "https://a.example/w"}, "response": {"status": 200}}]`)}
	send(c, "GET", "https://a.example/z", "", nil)
	if p := c.problems(); len(p) != 1 || !strings.Contains(p[0], "1 recorded exchange(s) never requested, starting with GET https://a.example/w") {
		t.Errorf("unused exchanges: %q", p)
	}
	send(c, "GET", "https://a.example/w", "", nil)
	send(c, "GET", "https://a.example/v", "", nil)
	if p := c.problems(); len(p) != 1 || !strings.Contains(p[0], "unexpected request GET https://a.example/v: the fixture records 2 exchange(s)") {
		t.Errorf("extra request: %q", p)
	}
}

// echo is a node that fetches one URL and returns its status, so Run can be
// exercised end to end.
type echo struct{}

func (echo) Info() runtime.NodeInfo {
	return runtime.NodeInfo{ID: "test.echo", Capabilities: []string{"http.read", "clock", "secrets"}, Egress: []string{"a.example"}, Secrets: []string{"h"}}
}

func (echo) Run(ctx *runtime.Context, _, input json.RawMessage) (json.RawMessage, error) {
	var in struct{ URL string }
	json.Unmarshal(input, &in)
	secret, _ := ctx.Caps().Secrets.Secret(ctx, "h")
	resp, err := ctx.Caps().HTTPRead.Get(ctx, in.URL, http.Header{"X-Secret": {secret}})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"status": resp.Status, "body": string(resp.Body), "now": ctx.Caps().Clock.Now()})
}

func TestRunReplaysFixtures(t *testing.T) {
	manifest := `{"fixtures": [
		{"name": "ok", "input": {"url": "https://a.example/p"},
		 "output": {"status": 200, "body": "{\"a\":1}", "now": "2026-01-02T03:04:05Z"},
		 "http": [{"request": {"method": "GET", "url": "https://a.example/p", "headers": {"X-Secret": "fixture-secret:h"}},
		           "response": {"status": 200, "body": {"a": 1}}}]},
		{"name": "limited", "input": {"url": "https://a.example/p"}, "error": {"kind": "RateLimited", "retryAfter": "3s"},
		 "http": [{"request": {"method": "GET", "url": "https://a.example/p"}, "response": {"status": 429, "headers": {"Retry-After": "3"}}}]}]}`
	Run(t, echo{}, nil, []byte(manifest))
}
