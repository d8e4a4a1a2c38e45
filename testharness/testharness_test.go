package testharness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/testharness"
)

// provider is a real HTTP server that charges once per Idempotency-Key
// and counts every charge.
type provider struct {
	mu      sync.Mutex
	charges map[string]int // order -> charges
	seen    map[string]bool
}

func newProvider(t *testing.T) (*provider, *httptest.Server) {
	p := &provider{charges: map[string]int{}, seen: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		if r.Method == http.MethodPost {
			if k := r.Header.Get("Idempotency-Key"); k == "" || !p.seen[k] {
				p.charges[string(body)]++
				p.seen[k] = k != ""
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"charged":%q}`, body)
	}))
	t.Cleanup(srv.Close)
	return p, srv
}

func TestCassetteRecordsThenReplaysWithoutTheNetwork(t *testing.T) {
	t.Parallel()
	_, srv := newProvider(t)
	path := filepath.Join(t.TempDir(), "charge.cassette.json")
	rec := testharness.NewRecorder(nil)
	client := &http.Client{Transport: rec}
	for _, order := range []string{"o-1", "o-2"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(order))
		req.Header.Set("Idempotency-Key", "k-"+order)
		req.Header.Set("Authorization", "Bearer sk_live_secret")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	srv.Close() // from here on, nothing may reach the network

	c, err := testharness.LoadCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	client = &http.Client{Transport: c}
	// Replayed out of order, each answered by its own recording.
	for _, order := range []string{"o-2", "o-1"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(order))
		req.Header.Set("Idempotency-Key", "k-"+order)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`{"charged":%q}`, order); string(body) != want {
			t.Errorf("replayed %s, want %s", body, want)
		}
	}
	if u := c.Unused(); len(u) != 0 {
		t.Errorf("unused after replaying both: %v", u)
	}

	// An unrecorded request fails and names how it differs from the
	// closest recording.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader("o-3"))
	req.Header.Set("Idempotency-Key", "k-o-1")
	_, err = client.Do(req)
	if err == nil || runtime.KindOf(transportErr(err)) != runtime.Permanent {
		t.Fatalf("unrecorded request: %v", err)
	}
	p := strings.Join(c.Problems(), "\n")
	if !strings.Contains(p, "closest recorded request (exchange 1)") || !strings.Contains(p, `body: recorded "o-1", sent "o-3"`) {
		t.Errorf("problem does not diff against the closest recording:\n%s", p)
	}

	// Secrets never reach the cassette file.
	data, _ := readFile(path)
	if strings.Contains(data, "sk_live_secret") || !strings.Contains(data, "REDACTED") {
		t.Errorf("the Authorization header was recorded:\n%s", data)
	}
}

// transportErr unwraps the *url.Error the http client wraps transport
// errors in.
func transportErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

type order struct {
	OrderID string `json:"order_id"`
	Cents   int    `json:"cents"`
}

type receipt struct {
	OrderID string `json:"order_id"`
	Body    string `json:"body"`
	At      string `json:"at"`
	Nonce   uint64 `json:"nonce"`
}

var chargeInfo = runtime.NodeInfo{ID: "payments.charge", Version: "1.0.0", Effects: runtime.Effectful, Determinism: runtime.BestEffort,
	KeySchema: "payments.charge@1", KeyFields: []string{"order_id"}}

// charge posts the order with its idempotency key unless dedupeTTL > 0, in
// which case it leaves the key off and dedupes itself for that long.
func charge(base string, dedupeTTL time.Duration) runtime.Runner {
	return runtime.Typed(chargeInfo, func(ctx *runtime.Context, _ struct{}, in order) (receipt, error) {
		caps := ctx.Caps()
		header := http.Header{"Content-Type": {"text/plain"}}
		if dedupeTTL > 0 {
			first, err := caps.Dedupe.PutIfAbsent(ctx, ctx.IdempotencyKey(), dedupeTTL)
			if err != nil || !first {
				return receipt{OrderID: in.OrderID, Body: `{"charged":"` + in.OrderID + `"}`}, err
			}
		} else {
			header.Set("Idempotency-Key", ctx.IdempotencyKey())
		}
		token, err := caps.Secrets.Secret(ctx, "stripe")
		if err != nil {
			return receipt{}, err
		}
		header.Set("Authorization", "Bearer "+token)
		resp, err := caps.HTTPWrite.Do(ctx, http.MethodPost, base+"/charges", header, []byte(in.OrderID))
		if err != nil {
			return receipt{}, err
		}
		return receipt{OrderID: in.OrderID, Body: string(resp.Body)}, nil
	})
}

type secrets map[string]string

func (s secrets) Secret(_ context.Context, h string) (string, error) { return s[h], nil }

func TestDuplicatesPassesAKeyedConnector(t *testing.T) {
	t.Parallel()
	p, srv := newProvider(t)
	r := testharness.Duplicates(t, target(t, p, srv, charge(srv.URL, 0)), deliveries("o-1", "o-2", "o-3"), testharness.DuplicateOptions{TTL: 24 * time.Hour})
	if r.Deliveries < 3*(2+3) || r.Keys != 3 || len(r.Extra) != 0 {
		t.Fatalf("report %+v", r)
	}
	for o, n := range p.charges {
		if n != 1 {
			t.Errorf("order %s charged %d times", o, n)
		}
	}
}

// TestDuplicatesCatchesAShortDedupeWindow: a connector that dedupes itself
// for an hour although it promises 24h passes bursts but not the delayed
// replays and the copy just inside the TTL (3 charges each), and the
// harness names every key.
func TestDuplicatesCatchesAShortDedupeWindow(t *testing.T) {
	t.Parallel()
	p, srv := newProvider(t)
	ft := &failureTB{TB: t}
	r := testharness.Duplicates(ft, target(t, p, srv, charge(srv.URL, time.Hour)), deliveries("o-1", "o-2"), testharness.DuplicateOptions{TTL: 24 * time.Hour})
	if len(r.Extra) != 2 {
		t.Fatalf("extra effects %v, want both keys", r.Extra)
	}
	got := strings.Join(ft.errors, "\n")
	for _, want := range []string{"(o-1) saw 3 effects within its TTL of 24h0m0s", "(o-2) saw 3 effects within its TTL of 24h0m0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func target(t *testing.T, p *provider, srv *httptest.Server, node runtime.Runner) testharness.Target {
	host, _ := url.Parse(srv.URL)
	return testharness.Target{
		Node: node,
		Caps: func(clock *testharness.Clock) runtime.Capabilities {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "dup.db"), boltstore.Options{NoSync: true, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return runtime.Capabilities{HTTPWrite: engine.NewHTTP(nil, []string{host.Hostname()}),
				Dedupe: engine.NewStoreDedupe(st, "payments.charge", clock.Now), Clock: clock, Secrets: secrets{"stripe": "sk"}}
		},
		Effects: func() map[string]int {
			p.mu.Lock()
			defer p.mu.Unlock()
			out := map[string]int{}
			for o, n := range p.charges {
				key, _ := engine.IdempotencyKey(chargeInfo, chargeInfo.ID, json.RawMessage(`{"order_id":"`+o+`"}`))
				out[key] = n
			}
			return out
		},
	}
}

func deliveries(orders ...string) []testharness.Delivery {
	var out []testharness.Delivery
	for _, o := range orders {
		out = append(out, testharness.Delivery{Name: o, Input: json.RawMessage(`{"order_id":"` + o + `","cents":100}`)})
	}
	return out
}

// failureTB collects Errorf calls instead of failing the test.
type failureTB struct {
	testing.TB
	errors []string
}

func (f *failureTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *failureTB) Helper() {}

func TestRecordAndReplay(t *testing.T) {
	t.Parallel()
	_, srv := newProvider(t)
	host, _ := url.Parse(srv.URL)
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := testharness.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	caps := runtime.Capabilities{HTTPWrite: engine.NewHTTP(nil, []string{host.Hostname()}), KVRead: engine.NewStoreKV(st, "c"), KVWrite: engine.NewStoreKV(st, "c"),
		Clock: clock, RNG: testharness.RNG(7), Secrets: secrets{"stripe": "sk_live_secret"}}
	node := func(path string) runtime.Runner {
		return runtime.Typed(chargeInfo, func(ctx *runtime.Context, _ struct{}, in order) (receipt, error) {
			c := ctx.Caps()
			token, _ := c.Secrets.Secret(ctx, "stripe")
			prev, _, err := c.KVRead.Get(ctx, in.OrderID)
			if err != nil {
				return receipt{}, err
			}
			resp, err := c.HTTPWrite.Do(ctx, http.MethodPost, srv.URL+path, http.Header{"Authorization": {"Bearer " + token}}, []byte(in.OrderID))
			if err != nil {
				return receipt{}, err
			}
			if err := c.KVWrite.Put(ctx, in.OrderID, append(prev, 'x')); err != nil {
				return receipt{}, err
			}
			return receipt{OrderID: in.OrderID, Body: string(resp.Body), At: c.Clock.Now().Format(time.RFC3339), Nonce: c.RNG.Uint64()}, nil
		})
	}
	rec := testharness.Record(context.Background(), node("/charges"), "key-1", nil, json.RawMessage(`{"order_id":"o-9","cents":5}`), caps)
	if rec.Error != nil || len(rec.Calls) != 6 {
		t.Fatalf("recording: error %v, %d calls: %+v", rec.Error, len(rec.Calls), rec.Calls)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	data, _ := readFile(path)
	if strings.Contains(data, "sk_live_secret") {
		t.Fatalf("the recording holds the secret:\n%s", data)
	}
	srv.Close() // the replay needs no provider, store, clock or rng
	back, err := testharness.LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := testharness.Replay(context.Background(), node("/charges"), back); err != nil {
		t.Fatalf("replaying the same node: %v", err)
	}
	err = testharness.Replay(context.Background(), node("/v2/charges"), back)
	if err == nil || !strings.Contains(err.Error(), `call 3: recorded http.write Do`) || !strings.Contains(err.Error(), "/v2/charges") {
		t.Fatalf("a node that changed its URL replayed: %v", err)
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
