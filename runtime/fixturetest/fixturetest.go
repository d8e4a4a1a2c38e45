// Package fixturetest runs a connector's spec fixtures through its node, the
// way net/http/httptest runs handlers: each fixture's params and input go in,
// its recorded HTTP exchanges are replayed (nothing reaches the network), and
// the output or the error kind must be what the fixture says.
//
// flowgen gen writes a fixtures_gen_test.go that calls Run for every
// connector with fixtures. A connector whose fixtures need more than the
// defaults (a database, particular secret values) implements Setup in a
// hand-written test file.
package fixturetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// Env is what the fixtures' capabilities are backed by beyond the defaults:
// an in-memory-fast embedded store for KV and dedupe, a temporary directory
// for blobs, a fixed clock, a seeded random source and placeholder secrets.
type Env struct {
	// DB backs db.read and db.write; without it those calls fail with
	// PolicyDenied.
	DB *sql.DB
	// Secrets resolves secret handles; by default a handle h resolves to
	// "fixture-secret:" + h.
	Secrets runtime.Secrets
	// Blobs backs blob.read and blob.write (for example s3blobs on a test
	// server); by default a temporary directory does.
	Blobs interface {
		runtime.BlobReader
		runtime.BlobWriter
	}
}

// Setup is implemented by a connector (usually in a hand-written
// _test.go file) whose fixtures need an Env; Run calls it once.
type Setup interface {
	FixtureEnv(t testing.TB) Env
}

// Now is the time the fixtures' clock capability tells.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is one fixture as the manifest holds it.
type fixture struct {
	Name   string
	Params json.RawMessage
	Input  json.RawMessage
	Output json.RawMessage
	Error  *struct {
		Kind       string
		RetryAfter string
	}
	HTTP []exchange
}

type exchange struct {
	Request struct {
		Method  string
		URL     string
		Headers map[string]string
		Body    json.RawMessage
	}
	Response struct {
		Status  int
		Headers map[string]string
		Body    json.RawMessage
		Timeout bool
	}
}

// Run runs every fixture in manifest (the connector's generated Manifest())
// through node, each as a subtest, with impl consulted for Setup.
func Run(t *testing.T, node runtime.Runner, impl any, manifest []byte) {
	t.Helper()
	var m struct{ Fixtures []fixture }
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(m.Fixtures) == 0 {
		t.Fatal("the spec declares no fixtures")
	}
	var env Env
	if s, ok := impl.(Setup); ok {
		env = s.FixtureEnv(t)
	}
	for _, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) { runOne(t, node, env, fx) })
	}
}

func runOne(t *testing.T, node runtime.Runner, env Env, fx fixture) {
	info := node.Info()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "fixture.db"), boltstore.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := runtime.IdempotencyKey(info, info.ID, fx.Input)
	if err != nil {
		t.Fatalf("fixture input: %v", err)
	}
	tape := &cassette{exchanges: fx.HTTP, key: key, sent: sha256.New()}
	caps := capabilities(t, info, env, st, tape)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := node.Run(runtime.NewContext(ctx, key, 1, caps), fx.Params, fx.Input)
	if tape.repeated > 0 && info.RetryOwner != runtime.RetryConnector {
		t.Errorf("the connector repeated its last request %d time(s) by itself, but its spec makes the retry owner %s: retries must have one owner (declare retry.owner: connector, or stop retrying in Run)",
			tape.repeated, info.RetryOwner)
	}
	for _, problem := range tape.problems() {
		t.Error(problem)
	}
	t.Logf("%s %s %s", ReplayHashMarker, fx.Name, replayHash(info.Determinism, tape.sent.Sum(nil), out, err))
	switch {
	case fx.Error != nil:
		checkError(t, err, fx.Error.Kind, fx.Error.RetryAfter)
	case err != nil:
		t.Fatalf("want output, got error: %v", err)
	default:
		if diff := jsonDiff(fx.Output, out); diff != "" {
			t.Errorf("output differs from the fixture:\n%s", diff)
		}
	}
}

// ReplayHashMarker starts the line each fixture run logs (visible with -v):
// "replay-hash FIXTURE sha256:HEX". The hash covers every request the node
// sent (method, URL, headers, body) and its result: the output bytes
// exactly for a Strict connector, their canonical JSON for a Stable or
// weaker one, or the error's kind and message. Certification compares it
// across repeated runs.
const ReplayHashMarker = "replay-hash"

// Pins names what a fixture run holds fixed, so that a replay can be
// compared with another: recorded as certification evidence.
var Pins = fmt.Sprintf("clock fixed at %s; rng seed 1; HTTP answered from the fixture's recording; store and blobs fresh per fixture", Now.Format(time.RFC3339))

func replayHash(d runtime.Determinism, sent, out []byte, err error) string {
	h := sha256.New()
	h.Write(sent)
	switch {
	case err != nil:
		fmt.Fprintf(h, "error %s %q", runtime.KindOf(err), err.Error())
	case d == runtime.Strict:
		fmt.Fprintf(h, "output %d\n", len(out))
		h.Write(out)
	default:
		var v any
		if json.Unmarshal(out, &v) == nil {
			if c, cerr := strictyaml.CanonicalJSON(v); cerr == nil {
				out = c
			}
		}
		fmt.Fprintf(h, "canonical output %d\n", len(out))
		h.Write(out)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// capabilities backs a node's declared capabilities for a fixture run:
// the store, the env's extras, transport for HTTP, a fixed clock and a
// seeded random source.
func capabilities(t *testing.T, info runtime.NodeInfo, env Env, st *boltstore.Store, transport http.RoundTripper) runtime.Capabilities {
	secrets := env.Secrets
	if secrets == nil {
		secrets = placeholderSecrets{}
	}
	grants := runtime.Grants{Store: st, Blobs: env.Blobs, BlobDir: t.TempDir(), Transport: transport, Secrets: secrets, DB: env.DB, Seed: 1}
	caps := grants.For(info)
	if caps.Clock != nil {
		caps.Clock = fixedClock{}
	}
	if caps.RNG != nil {
		caps.RNG = runtime.NewSeededRNG(1)
	}
	return caps
}

func checkError(t *testing.T, err error, kind, retryAfter string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got success", kind)
	}
	if got := runtime.KindOf(err).String(); got != kind {
		t.Fatalf("want a %s error, got %s: %v", kind, got, err)
	}
	if retryAfter == "" {
		return
	}
	want, perr := time.ParseDuration(retryAfter)
	var re *runtime.Error
	if perr != nil || !errors.As(err, &re) || re.RetryAfter != want {
		t.Errorf("want retry after %s, got error %v", retryAfter, err)
	}
}

// jsonDiff compares two JSON documents by value; "" when equal.
func jsonDiff(want, got []byte) string {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("fixture output is not JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("node output is not JSON: %v", err)
	}
	if reflect.DeepEqual(w, g) {
		return ""
	}
	wb, _ := json.MarshalIndent(w, "", "  ")
	gb, _ := json.MarshalIndent(g, "", "  ")
	return fmt.Sprintf("want %s\n got %s", wb, gb)
}

// cassette replays a fixture's exchanges in order and records every way
// the requests made differ from the recorded ones.
type cassette struct {
	mu        sync.Mutex
	exchanges []exchange
	next      int
	key       string
	errs      []string
	// sent digests every request as sent, for the replay hash.
	sent hash.Hash
	// repeated counts requests beyond the recording that repeat the last
	// recorded one: a retry made by the connector itself.
	repeated int
}

// RoundTrip answers with the next recorded response, or refuses a request
// that does not match it.
func (c *cassette) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var body []byte
	if req.Body != nil {
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(req.Body); err != nil {
			return nil, err
		}
		body = buf.Bytes()
	}
	if c.sent == nil {
		c.sent = sha256.New()
	}
	fmt.Fprintf(c.sent, "%s %s\n", req.Method, req.URL)
	for _, k := range slices.Sorted(maps.Keys(req.Header)) {
		fmt.Fprintf(c.sent, "%s: %q\n", k, req.Header[k])
	}
	fmt.Fprintf(c.sent, "%d\n", len(body))
	c.sent.Write(body)
	if c.next >= len(c.exchanges) {
		if n := len(c.exchanges); n > 0 && strings.EqualFold(c.exchanges[n-1].Request.Method, req.Method) && c.expand(c.exchanges[n-1].Request.URL) == req.URL.String() {
			c.repeated++
		}
		msg := fmt.Sprintf("unexpected request %s %s: the fixture records %d exchange(s)", req.Method, req.URL, len(c.exchanges))
		c.errs = append(c.errs, msg)
		return nil, runtime.Errorf(runtime.Permanent, "%s", msg)
	}
	ex := c.exchanges[c.next]
	c.next++
	if diffs := c.match(ex, req, body); len(diffs) > 0 {
		msg := fmt.Sprintf("request %d (%s %s) does not match the recording:\n  %s", c.next, req.Method, req.URL, strings.Join(diffs, "\n  "))
		c.errs = append(c.errs, msg)
		return nil, runtime.Errorf(runtime.Permanent, "%s", msg) // a retry would not match either
	}
	if ex.Response.Timeout {
		return nil, timeoutError{req.Method + " " + req.URL.String()}
	}
	resp := &http.Response{
		StatusCode: ex.Response.Status,
		Status:     fmt.Sprintf("%d %s", ex.Response.Status, http.StatusText(ex.Response.Status)),
		Header:     http.Header{},
		Request:    req,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	for k, v := range ex.Response.Headers {
		resp.Header.Set(k, v)
	}
	resp.Body = nopCloser{bytes.NewReader(bodyBytes(ex.Response.Body))}
	return resp, nil
}

// timeoutError is what a recorded timeout answers: a net.Error whose
// Timeout is true, as a transport reports a provider that never answered.
type timeoutError struct{ what string }

func (e timeoutError) Error() string {
	return e.what + ": timeout awaiting response headers (recorded)"
}
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// bodyBytes is a recorded body as sent: a JSON string is the raw text, any
// other JSON value is sent as compact JSON.
func bodyBytes(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return raw
	}
	return compact.Bytes()
}

func (c *cassette) expand(s string) string {
	return strings.ReplaceAll(s, "{{idempotency_key}}", c.key)
}

// match compares a request with a recording: method and URL exactly, each
// recorded header, and the body when one is recorded (as JSON values when
// the recording is JSON, else byte for byte).
func (c *cassette) match(ex exchange, req *http.Request, body []byte) []string {
	var diffs []string
	if !strings.EqualFold(ex.Request.Method, req.Method) {
		diffs = append(diffs, fmt.Sprintf("method: recorded %s, sent %s", ex.Request.Method, req.Method))
	}
	if want := c.expand(ex.Request.URL); want != req.URL.String() {
		diffs = append(diffs, fmt.Sprintf("url: recorded %s, sent %s", want, req.URL))
	}
	for k, v := range ex.Request.Headers {
		if want, got := c.expand(v), req.Header.Get(k); want != got {
			diffs = append(diffs, fmt.Sprintf("header %s: recorded %q, sent %q", k, want, got))
		}
	}
	if len(ex.Request.Body) > 0 && string(ex.Request.Body) != "null" {
		var s string
		if json.Unmarshal(ex.Request.Body, &s) == nil {
			if want := c.expand(s); want != string(body) {
				diffs = append(diffs, fmt.Sprintf("body: recorded %q, sent %q", want, body))
			}
		} else if d := jsonDiff(ex.Request.Body, body); d != "" {
			diffs = append(diffs, "body: "+strings.ReplaceAll(d, "\n", "\n  "))
		}
	}
	return diffs
}

// problems lists mismatches and recorded exchanges that were never used.
func (c *cassette) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.errs...)
	if c.next < len(c.exchanges) && len(c.errs) == 0 {
		ex := c.exchanges[c.next]
		out = append(out, fmt.Sprintf("%d recorded exchange(s) never requested, starting with %s %s", len(c.exchanges)-c.next, ex.Request.Method, ex.Request.URL))
	}
	return out
}

type placeholderSecrets struct{}

func (placeholderSecrets) Secret(_ context.Context, handle string) (string, error) {
	return "fixture-secret:" + handle, nil
}

type fixedClock struct{}

func (fixedClock) Now() time.Time { return Now }
