package fixturetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/testharness"
)

// Duplicates runs testharness.Duplicates over every fixture that expects an
// output: bursts of 2 to 8 copies in a shuffled order, delayed replays and
// copies under a skewed clock, each delivery a first attempt with the same
// idempotency key, all sharing one store whose clock is the harness's. A
// provider answers the recorded requests in any order and counts effects
// the way payment APIs do: a request with side effects (not GET or HEAD) is
// a new effect unless it repeats an Idempotency-Key header already seen.
// Every delivery must return the fixture's output, and every idempotency
// key must see at most one effect within the spec's idempotency TTL; the
// test names each key that saw more.
func Duplicates(t *testing.T, node runtime.Runner, impl any, manifest []byte) {
	t.Helper()
	var m struct {
		Fixtures    []fixture
		Idempotency *struct{ TTL flowtype.Duration }
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var env Env
	if s, ok := impl.(Setup); ok {
		env = s.FixtureEnv(t)
	}
	info := node.Info()
	p := &provider{effects: map[string]int{}}
	var deliveries []testharness.Delivery
	for _, fx := range m.Fixtures {
		if fx.Error != nil || len(fx.Output) == 0 {
			continue
		}
		p.exchanges = append(p.exchanges, fx.HTTP...)
		deliveries = append(deliveries, testharness.Delivery{Name: "fixture " + fx.Name, Params: fx.Params, Input: fx.Input, Output: fx.Output})
	}
	if len(deliveries) == 0 {
		t.Fatal("no fixture expects an output: nothing to deliver")
	}
	opts := testharness.DuplicateOptions{Start: Now}
	if m.Idempotency != nil {
		opts.TTL = m.Idempotency.TTL.Std()
	}
	target := testharness.Target{
		Node:    node,
		Effects: p.counts,
		Deliver: p.setCurrent,
		Caps: func(clock *testharness.Clock) runtime.Capabilities {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "duplicates.db"), boltstore.Options{NoSync: true, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			caps := capabilities(t, info, env, st, p)
			if caps.Clock != nil {
				caps.Clock = clock
			}
			return caps
		},
	}
	testharness.Duplicates(t, target, deliveries, opts)
	for _, problem := range p.problems() {
		t.Error(problem)
	}
}

// provider answers recorded requests by method and URL, in any order, and
// counts effects per delivery key.
type provider struct {
	mu        sync.Mutex
	exchanges []exchange
	current   string          // idempotency key of the delivery being run
	seen      map[string]bool // Idempotency-Key headers already applied
	effects   map[string]int
	errs      []string
}

func (p *provider) setCurrent(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = key
}

func (p *provider) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
	}
	for _, ex := range p.exchanges {
		want := strings.ReplaceAll(ex.Request.URL, "{{idempotency_key}}", p.current)
		if !strings.EqualFold(ex.Request.Method, req.Method) || want != req.URL.String() {
			continue
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			k := req.Header.Get("Idempotency-Key")
			if p.seen == nil {
				p.seen = map[string]bool{}
			}
			if k == "" || !p.seen[k] {
				p.effects[p.current]++
			}
			if k != "" {
				p.seen[k] = true
			}
		}
		resp := &http.Response{StatusCode: ex.Response.Status, Status: fmt.Sprintf("%d %s", ex.Response.Status, http.StatusText(ex.Response.Status)),
			Header: http.Header{}, Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		for k, v := range ex.Response.Headers {
			resp.Header.Set(k, v)
		}
		resp.Body = io.NopCloser(bytes.NewReader(bodyBytes(ex.Response.Body)))
		return resp, nil
	}
	msg := fmt.Sprintf("no recorded exchange answers %s %s", req.Method, req.URL)
	p.errs = append(p.errs, msg)
	return nil, runtime.Errorf(runtime.Permanent, "%s", msg)
}

func (p *provider) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.effects)
}

func (p *provider) problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}
