package flows

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/lib/pq" // the driver

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// providers stands in for Stripe, the shop's catalogue and Slack, counting
// the effects it sees by idempotency key.
type providers struct {
	mu      sync.Mutex
	charges map[string]int // Idempotency-Key -> charges made
	posts   int
	lookups int
}

func (p *providers) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	body, _ := io.ReadAll(req.Body)
	reply := func(status int, v any) (*http.Response, error) {
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(b))), Request: req}, nil
	}
	switch {
	case req.URL.Host == "api.shop.example" && strings.HasPrefix(req.URL.Path, "/v2/products/"):
		p.lookups++
		sku := strings.TrimPrefix(req.URL.Path, "/v2/products/")
		return reply(200, map[string]any{"sku": sku, "name": "Cup " + sku, "price": map[string]int{"cents": 1400}, "stock": 12})
	case req.URL.Host == "api.stripe.com" && req.URL.Path == "/v1/charges":
		key := req.Header.Get("Idempotency-Key")
		if key == "" || req.Header.Get("Authorization") != "Bearer sk_test" || !strings.Contains(string(body), "amount=4200") {
			return reply(400, map[string]string{"error": "bad request"})
		}
		p.charges[key]++
		return reply(200, map[string]any{"id": "ch_" + key[:8], "amount": 4200, "currency": "eur", "status": "succeeded"})
	case req.URL.Host == "hooks.slack.com":
		p.posts++
		return reply(200, "ok")
	}
	return reply(404, map[string]string{"error": "no route " + req.URL.String()})
}

type secrets map[string]string

func (s secrets) Secret(_ context.Context, handle string) (string, error) {
	if v, ok := s[handle]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no secret %q", handle)
}

const checkout = `{"order_id": "ord-7", "customer_id": "cus-1", "email": " Ada@Example.com ",
	"items": [{"sku": "sku-1", "qty": 1}, {"sku": "SKU-1", "qty": 2}, {"sku": "sku-2", "qty": 1}],
	"total_cents": 4200, "currency": "eur", "payment_method": "card", "card_token": "tok_visa"}`

// TestOrderFulfilmentRunsEndToEnd runs the generated flow with the real
// example connectors on the embedded store: the order is normalised, its
// lines looked up, charged once, saved to PostgreSQL and announced. A
// second job for the same order does not charge again: the charge edge is
// ExactlyOnce and the dedupe store remembers the key; nor does it post to
// Slack again, since the Slack connector dedupes its webhook.
func TestOrderFulfilmentRunsEndToEnd(t *testing.T) {
	flow, err := NewOrdersFulfilment(DefaultOrdersFulfilmentConnectors())
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("postgres", pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE orders (order_id text PRIMARY KEY, charge_id text NOT NULL,
		amount_cents bigint NOT NULL, currency text NOT NULL, status text NOT NULL, row_version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	p := &providers{charges: map[string]int{}}
	grants := runtime.Grants{Store: st, BlobDir: t.TempDir(), Transport: p, DB: db, Secrets: secrets{
		"stripe/secret-key":      "sk_test",
		"shop/catalog-token":     "shop_test",
		"slack/orders-webhook":   "https://hooks.slack.com/services/T/B/X",
		"warehouse/database-url": "unused: the engine binds the database",
	}}
	e := runtime.New(st, runtime.Options{Owner: "test", Capabilities: grants.For})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func() runtime.JobStatus {
		job, err := e.Start(ctx, flow.Name, json.RawMessage(checkout))
		if err != nil {
			t.Fatal(err)
		}
		for range 10_000 {
			did, err := e.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !did {
				break
			}
		}
		status, err := e.Status(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}

	first := run()
	if first.State != runtime.StateSucceeded || string(first.Result["notify"]) != `{"ok":true}` {
		t.Fatalf("first job: %+v", first)
	}
	if p.lookups != 2 || len(p.charges) != 1 || p.posts != 1 {
		t.Errorf("effects: %d lookups (want 2, one per merged line), %d charge keys (want 1), %d posts (want 1)", p.lookups, len(p.charges), p.posts)
	}
	var version int64
	var charge string
	if err := db.QueryRow(`SELECT charge_id, row_version FROM orders WHERE order_id = 'ord-7'`).Scan(&charge, &version); err != nil || version != 1 {
		t.Fatalf("saved order: %q version %d, %v", charge, version, err)
	}

	second := run()
	if second.State != runtime.StateSucceeded {
		t.Fatalf("second job: %+v", second)
	}
	for key, n := range p.charges {
		if n != 1 {
			t.Errorf("charge key %s charged %d times", key, n)
		}
	}
	if p.posts != 1 {
		t.Errorf("the second job posted to Slack again (%d posts)", p.posts)
	}
	if err := db.QueryRow(`SELECT row_version FROM orders WHERE order_id = 'ord-7'`).Scan(&version); err != nil || version != 1 {
		t.Errorf("replayed save changed the row: version %d, %v", version, err)
	}
}

func TestPriceRefreshBuilds(t *testing.T) {
	flow, err := NewCatalogPriceRefresh(DefaultCatalogPriceRefreshConnectors())
	if err != nil {
		t.Fatal(err)
	}
	if flow.Name != "catalog.price_refresh" || len(flow.Nodes) != 1 || flow.Nodes[0].Runner.Info().ID != "catalog.price_list" {
		t.Errorf("flow = %+v", flow)
	}
}
