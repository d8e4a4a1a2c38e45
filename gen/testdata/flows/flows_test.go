package flows

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// TestParentWaitsForReviewThenRunsTheChild runs the generated flows: the
// slug node, the checkpoint that parks the job until a decision, and the
// subflow that the approved value enters.
func TestParentWaitsForReviewThenRunsTheChild(t *testing.T) {
	parent, err := NewDemoParent(DefaultDemoParentConnectors())
	if err != nil {
		t.Fatal(err)
	}
	child, err := NewDemoChild(DefaultDemoChildConnectors())
	if err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := runtime.New(store, runtime.Options{Owner: "test"})
	for _, f := range []*runtime.Flow{parent, child} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	drain := func() {
		for range 1000 {
			if did, err := e.Step(ctx); err != nil {
				t.Fatal(err)
			} else if !did {
				return
			}
		}
	}
	job, err := e.Start(ctx, "demo.parent", json.RawMessage(`{"title": "Typed Flows"}`))
	if err != nil {
		t.Fatal(err)
	}
	drain()
	if status, _ := e.Status(ctx, job); status.State != runtime.StateRunning {
		t.Fatalf("before the review: %+v", status)
	}
	if n, err := e.Signal(ctx, job, "review", runtime.Decision{Approved: true, By: "editor"}); err != nil || n != 1 {
		t.Fatalf("signal: %d, %v", n, err)
	}
	drain()
	st, err := e.Status(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateSucceeded || string(st.Result["nested"]) != `{"again":{"slug":"typed-flows"}}` {
		t.Fatalf("after the review: %+v %s", st, st.Result["nested"])
	}
}

func TestInlineNodesRun(t *testing.T) {
	flow, err := NewDemoInline(DefaultDemoInlineConnectors())
	if err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := runtime.New(store, runtime.Options{Owner: "test"})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "demo.inline", json.RawMessage(`{"title": "Größe zählt"}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if did, err := e.Step(ctx); err != nil {
			t.Fatal(err)
		} else if !did {
			break
		}
	}
	st, err := e.Status(ctx, job)
	if err != nil || st.State != runtime.StateSucceeded || string(st.Result["count"]) != `{"runes":10}` {
		t.Fatalf("status %+v (%v): %s", st, err, st.Result["count"])
	}
}

func TestFanOutOverSplitLines(t *testing.T) {
	flow, err := NewDemoFanout(DefaultDemoFanoutConnectors())
	if err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := runtime.New(store, runtime.Options{Owner: "test"})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "demo.fanout", json.RawMessage(`{"text": "Hello World\n¡¿?!\nSecond Line"}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if did, err := e.Step(ctx); err != nil {
			t.Fatal(err)
		} else if !did {
			break
		}
	}
	// The middle line has no ASCII word and fails; the quorum of 1 holds.
	st, err := e.Status(ctx, job)
	if err != nil || st.State != runtime.StateSucceeded || string(st.Result["each"]) != `[{"slug":"hello-world"},null,{"slug":"second-line"}]` {
		t.Fatalf("status %+v (%v): %s", st, err, st.Result["each"])
	}
}
