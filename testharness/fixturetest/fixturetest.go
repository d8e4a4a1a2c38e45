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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
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

// Run runs every fixture in manifest (the connector's generated Manifest())
// through node, each as a subtest, with impl consulted for Setup.
func Run(t *testing.T, node runtime.Runner, impl any, manifest []byte) {
	t.Helper()
	m, err := httpfixture.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Fixtures) == 0 {
		t.Fatal("the spec declares no fixtures")
	}
	env := setup(t, impl, m)
	for _, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) { runOne(t, node, env, fx) })
	}
}

// setup asks impl for its Env, defaults secrets to the spec's fixture
// placeholders, and runs the spec's fixture database setup on Env.DB.
func setup(t *testing.T, impl any, m *httpfixture.Manifest) Env {
	t.Helper()
	var env Env
	if s, ok := impl.(Setup); ok {
		env = s.FixtureEnv(t)
	}
	if env.Secrets == nil {
		env.Secrets = manifestSecrets{m}
	}
	if sql := m.DatabaseSetup(); sql != "" {
		if env.DB == nil {
			t.Fatal("the spec declares fixtureEnv.database, but FixtureEnv gives no DB: implement fixturetest.Setup in a _test.go file")
		}
		if _, err := env.DB.Exec(sql); err != nil {
			t.Fatalf("fixtureEnv.database.setup: %v", err)
		}
	}
	return env
}

func runOne(t *testing.T, node runtime.Runner, env Env, fx httpfixture.Fixture) {
	info := node.Info()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "fixture.db"), boltstore.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := engine.IdempotencyKey(info, info.ID, fx.Input)
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
		if diff := httpfixture.JSONDiff(fx.Output, out); diff != "" {
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
	grants := engine.Grants{Store: st, Blobs: env.Blobs, BlobDir: t.TempDir(), Transport: transport, Secrets: env.Secrets, DB: env.DB,
		Clock: fixedClock{}, Seed: 1}
	return grants.For(info)
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

// cassette replays a fixture's exchanges in order and records every way
// the requests made differ from the recorded ones.
type cassette struct {
	mu        sync.Mutex
	exchanges []httpfixture.Exchange
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
		if n := len(c.exchanges); n > 0 && c.exchanges[n-1].SameTarget(req.Method, req.URL.String(), c.key) {
			c.repeated++
		}
		msg := fmt.Sprintf("unexpected request %s %s: the fixture records %d exchange(s)", req.Method, req.URL, len(c.exchanges))
		c.errs = append(c.errs, msg)
		return nil, runtime.Errorf(runtime.Permanent, "%s", msg)
	}
	ex := c.exchanges[c.next]
	c.next++
	if diffs := ex.Diff(req.Method, req.URL.String(), req.Header, body, c.key); len(diffs) > 0 {
		msg := fmt.Sprintf("request %d (%s %s) does not match the recording:\n  %s", c.next, req.Method, req.URL, strings.Join(diffs, "\n  "))
		c.errs = append(c.errs, msg)
		return nil, runtime.Errorf(runtime.Permanent, "%s", msg) // a retry would not match either
	}
	if ex.Response.Timeout {
		return nil, httpfixture.TimeoutError{What: req.Method + " " + req.URL.String()}
	}
	return ex.Answer(req), nil
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

// manifestSecrets resolves handles to the spec's fixture placeholders.
type manifestSecrets struct{ m *httpfixture.Manifest }

func (s manifestSecrets) Secret(_ context.Context, handle string) (string, error) {
	return s.m.Secret(handle), nil
}

type fixedClock struct{}

func (fixedClock) Now() time.Time { return Now }
