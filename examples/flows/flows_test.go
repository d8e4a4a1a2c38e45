package flows

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	_ "github.com/lib/pq" // the driver

	"github.com/flowgen-dev/flowgen/examples/standins"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// inProcess carries requests to the stand-ins without a network.
type inProcess struct{ apis *standins.APIs }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	in := req.Clone(req.Context())
	in.Host = req.URL.Host
	p.apis.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
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
	apis := standins.New()
	grants := engine.Grants{Store: st, BlobDir: t.TempDir(), Transport: inProcess{apis}, DB: db, Secrets: secrets(standins.Secrets)}
	e := engine.New(st, engine.Options{Owner: "test", Capabilities: grants.For})
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
	if c := apis.Counts(); c.Lookups != 2 || len(c.Charges) != 1 || c.Posts != 1 {
		t.Errorf("effects: %d lookups (want 2, one per merged line), %d charge keys (want 1), %d posts (want 1)", c.Lookups, len(c.Charges), c.Posts)
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
	c := apis.Counts()
	for key, n := range c.Charges {
		if n != 1 {
			t.Errorf("charge key %s charged %d times", key, n)
		}
	}
	if c.Posts != 1 {
		t.Errorf("the second job posted to Slack again (%d posts)", c.Posts)
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
