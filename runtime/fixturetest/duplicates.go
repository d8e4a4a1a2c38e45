package fixturetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// Duplicates delivers the input of every fixture that expects an output
// several times (2 to 10, in bursts, interleaved across fixtures in a
// shuffled order), as a message broker redelivering it would: each
// delivery is a first attempt with the same idempotency key, all sharing
// one store. A provider answers the recorded requests in any order and
// counts effects the way payment APIs do: a request with side effects
// (not GET or HEAD) is a new effect unless it repeats an Idempotency-Key
// header already seen. Every delivery must return the fixture's output,
// and every idempotency key must see at most one effect; the test names
// each key that saw more.
func Duplicates(t *testing.T, node runtime.Runner, impl any, manifest []byte) {
	t.Helper()
	var m struct{ Fixtures []fixture }
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var env Env
	if s, ok := impl.(Setup); ok {
		env = s.FixtureEnv(t)
	}
	info := node.Info()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "duplicates.db"), boltstore.Options{NoSync: true, Now: func() time.Time { return Now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	type delivery struct {
		fx  fixture
		key string
	}
	var plan []delivery
	rng := rand.New(rand.NewPCG(1, 2))
	p := &provider{effects: map[string]int{}}
	for _, fx := range m.Fixtures {
		if fx.Error != nil || len(fx.Output) == 0 {
			continue
		}
		key, err := runtime.IdempotencyKey(info, info.ID, fx.Input)
		if err != nil {
			t.Fatalf("fixture %s input: %v", fx.Name, err)
		}
		p.exchanges = append(p.exchanges, fx.HTTP...)
		for range 2 + rng.IntN(9) {
			plan = append(plan, delivery{fx, key})
		}
	}
	if len(plan) == 0 {
		t.Fatal("no fixture expects an output: nothing to deliver")
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	caps := capabilities(t, info, env, st, p)
	byKey := map[string]string{} // idempotency key -> fixture
	for _, d := range plan {
		byKey[d.key] = d.fx.Name
		p.setCurrent(d.key)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := node.Run(runtime.NewContext(ctx, d.key, 1, caps), d.fx.Params, d.fx.Input)
		cancel()
		if err != nil {
			t.Errorf("fixture %s: a duplicate delivery failed: %v", d.fx.Name, err)
			continue
		}
		if diff := jsonDiff(d.fx.Output, out); diff != "" {
			t.Errorf("fixture %s: a duplicate delivery returned other output:\n%s", d.fx.Name, diff)
		}
	}
	for _, problem := range p.problems() {
		t.Error(problem)
	}
	for _, key := range slices.Sorted(maps.Keys(p.effects)) {
		if n := p.effects[key]; n > 1 {
			t.Errorf("idempotency key %s (fixture %s) saw %d effects at the provider: the connector must pass its key to the provider (ctx.IdempotencyKey) or dedupe (ctx.PutIfAbsent)", key, byKey[key], n)
		}
	}
	t.Logf("%d deliveries of %d fixtures", len(plan), len(byKey))
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

func (p *provider) problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}
