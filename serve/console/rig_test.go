package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/browsertest"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/serve/console"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
)

// order is the input and output of the test flow's nodes.
type order struct {
	Order string `json:"order"`
	Email string `json:"email,omitempty"`
	Note  string `json:"note,omitempty"`
}

// classes is the data-class table of the test connectors: the email is
// personal data, the rest public.
func classes(part, path string) string {
	if path == "email" {
		return "pii.email"
	}
	return "public"
}

// ordersFlow looks an order up, waits for a human at a checkpoint and
// ships it.
func ordersFlow() *runtime.Flow {
	node := func(id string, effects flowtype.Effects) runtime.Runner {
		info := runtime.NodeInfo{ID: id, Version: "1.0.0", Effects: effects, DataClass: classes}
		return runtime.Typed(info, func(ctx *runtime.Context, _ struct{}, in order) (order, error) { return in, nil })
	}
	return &runtime.Flow{
		Name:    "orders",
		Version: "1.0.0",
		Nodes: []*runtime.FlowNode{
			{Alias: "lookup", Runner: node("test.lookup", flowtype.ReadOnly)},
			{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "ship it?"}},
			{Alias: "ship", Runner: node("test.ship", flowtype.Effectful)},
		},
		Edges: []runtime.Edge{
			{From: "lookup", FromPort: "out", To: "approve", Delivery: flowtype.AtLeastOnce},
			{From: "approve", FromPort: "approved", To: "ship", Delivery: flowtype.ExactlyOnce},
		},
	}
}

// rig is a server with workers, the job API and the console on one
// store.
type rig struct {
	t      *testing.T
	engine *engine.Engine
	srv    *httptest.Server
	token  string
	audit  *testutil.SyncBuffer
}

// stores are the backends every console test runs on.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"bolt", func(t *testing.T) store.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "flowgen.db"), boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"postgres", func(t *testing.T) store.Store {
		s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func newRig(t *testing.T, s store.Store) *rig {
	t.Helper()
	e := engine.New(s, engine.Options{Owner: "console-test"})
	if err := e.Register(ordersFlow()); err != nil {
		t.Fatal(err)
	}
	audit := &testutil.SyncBuffer{}
	ui, err := console.New(e, console.Options{Flows: e, Actor: "tester", Log: slog.New(slog.NewTextHandler(audit, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, engine: e, token: "secret-token-of-the-test", audit: audit}
	r.srv = httptest.NewServer(jobapi.NewHandler(e, jobapi.HandlerOptions{Token: r.token, Console: ui}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, 2) }()
	t.Cleanup(func() {
		r.srv.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
		s.Close()
	})
	return r
}

// start starts an order job and returns its id.
func (r *rig) start(o order) runtime.JobID {
	r.t.Helper()
	in, _ := json.Marshal(o)
	job, err := r.engine.Start(context.Background(), "orders", in)
	if err != nil {
		r.t.Fatal(err)
	}
	return job
}

// awaitWaiting waits until job waits at its checkpoint.
func (r *rig) awaitWaiting(job runtime.JobID) {
	r.t.Helper()
	out, err := jobapi.Await(context.Background(), r.engine, job, 20*time.Second)
	if err != nil || len(out.Waiting) == 0 {
		r.t.Fatalf("job %s does not wait at its checkpoint: %+v %v", job, out, err)
	}
}

// browser reads the console as a browser would.
func (r *rig) browser() *browsertest.Client { return browsertest.NewClient(r.t, r.srv.URL) }
