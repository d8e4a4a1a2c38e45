package fixturetest

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/testharness"
)

// Duplicates runs testharness.Duplicates over every fixture that expects an
// output: bursts of 2 to 8 copies in a shuffled order, delayed replays and
// copies under a skewed clock, each delivery a first attempt with the same
// idempotency key, all sharing one store whose clock is the harness's. A
// provider answers the recorded requests in any order and counts effects
// by the spec's provider contract (providerDedupe; without one, the way
// payment APIs do: a request with side effects, not GET or HEAD, is a new
// effect unless it repeats an Idempotency-Key header already seen); a
// token request to the spec's auth.tokenURL is none.
// Every delivery must return the fixture's output (when the node declares
// Stable determinism or better), and every idempotency
// key must see at most one effect within the spec's idempotency TTL; the
// test names each key that saw more.
func Duplicates(t *testing.T, node runtime.Runner, impl any, manifest []byte) {
	t.Helper()
	m, err := httpfixture.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}
	env := setup(t, impl, m)
	info := node.Info()
	p := &provider{effects: map[string]int{}, byKey: map[string][]httpfixture.Exchange{}, token: m.Token(), served: map[[2]int]bool{}}
	if m.Idempotency != nil {
		p.world.Contract = m.Idempotency.ProviderDedupe
	}
	var deliveries []testharness.Delivery
	for _, fx := range m.Fixtures {
		if !fx.Succeeds() {
			continue
		}
		p.exchanges = append(p.exchanges, fx.HTTP...)
		if key, err := engine.IdempotencyKey(info, info.ID, fx.Input); err == nil {
			p.byKey[key] = append(p.byKey[key], fx.HTTP...)
		}
		d := testharness.Delivery{Name: "fixture " + fx.Name, Params: fx.Params, Input: fx.Input}
		if info.Determinism <= flowtype.Stable {
			// A BestEffort node may answer a redelivery otherwise (the
			// clock it reads); certification compares only these too.
			d.Output = fx.Output
		}
		deliveries = append(deliveries, d)
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

// provider answers recorded requests by method and URL, in any order,
// from the delivered fixture's recording first (two fixtures may post to
// one URL), and counts effects per delivery key (httpfixture.Provider
// decides what is an effect, by the spec's provider contract).
type provider struct {
	mu        sync.Mutex
	exchanges []httpfixture.Exchange
	byKey     map[string][]httpfixture.Exchange // each fixture's, by its key
	current   string                            // idempotency key of the delivery being run
	world     httpfixture.Provider
	token     httpfixture.TokenEndpoint // a token request there is no effect
	served    map[[2]int]bool           // answers given in this delivery (setCurrent): {0 own recording, 1 all}, index
	effects   map[string]int
	errs      []string
}

func (p *provider) setCurrent(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current, p.served = key, map[[2]int]bool{}
}

func (p *provider) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	// A request recorded more than once (a 429, then the success) gets
	// each answer in turn within a delivery, and the last from then on;
	// the delivered fixture's recording answers first (two fixtures may
	// post to one URL).
	all, from := p.byKey[p.current], 0
	if !slices.ContainsFunc(all, func(ex httpfixture.Exchange) bool { return ex.SameTarget(req.Method, req.URL.String(), p.current) }) {
		all, from = p.exchanges, 1
	}
	pick := -1
	for i, ex := range all {
		if ex.SameTarget(req.Method, req.URL.String(), p.current) {
			if pick = i; !p.served[[2]int{from, i}] {
				break
			}
		}
	}
	if pick >= 0 {
		p.served[[2]int{from, pick}] = true
		if !p.token.Asks(req.Method, req.URL.String(), req.Header, body) && p.world.Apply(req.Method, req.URL.String(), req.Header, body) {
			p.effects[p.current]++
		}
		return all[pick].Answer(req), nil
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
