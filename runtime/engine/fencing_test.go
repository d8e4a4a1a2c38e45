package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// TestStaleWorkerCannotCommit races two workers for one activation: A
// stalls inside the node past its visibility timeout and lease, B takes the
// message over and finishes the job, then A wakes and tries to commit. A
// must be fenced out, and the job's state must be B's alone. The node is
// Effectful, so its entry commits before the call; a node without effects
// folds on PostgreSQL, and then no one can take its message over at all
// (TestFoldedStallKeepsItsMessage).
func TestStaleWorkerCannotCommit(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			stall := make(chan struct{})
			entered := make(chan struct{}, 1)
			var mu sync.Mutex
			var outputs []string
			node := func(owner string) runtime.Runner {
				return runtime.Typed(runtime.NodeInfo{ID: "t.node", Effects: runtime.Effectful}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
					if owner == "A" {
						entered <- struct{}{}
						<-stall
					}
					mu.Lock()
					outputs = append(outputs, owner)
					mu.Unlock()
					return json.RawMessage(`{"by":"` + owner + `"}`), nil
				})
			}
			engine := func(owner string) *Engine {
				e := New(r.store, Options{Owner: owner, Visibility: 5 * time.Second, LeaseTTL: 5 * time.Second})
				if err := e.Register(&runtime.Flow{Name: "race", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: node(owner)}}}); err != nil {
					t.Fatal(err)
				}
				return e
			}
			a, bw := engine("A"), engine("B")
			job, err := a.Start(context.Background(), "race", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			aErr := make(chan error, 1)
			go func() { _, err := a.Step(context.Background()); aErr <- err }()
			<-entered                        // A holds the lease and is inside the node
			r.clock.Advance(6 * time.Second) // A's visibility and lease run out
			if did, err := bw.Step(context.Background()); !did || err != nil {
				t.Fatalf("B: %v %v", did, err)
			}
			close(stall)
			if err := <-aErr; !errors.Is(err, store.ErrFenced) {
				t.Fatalf("stale worker A: %v, want ErrFenced", err)
			}
			st, err := bw.Status(context.Background(), job)
			if err != nil || st.State != runtime.StateSucceeded || string(st.Result["n"]) != `{"by":"B"}` {
				t.Fatalf("%+v %v", st, err)
			}
		})
	}
}

// TestFoldedStallKeepsItsMessage: a Pure node runs inside the transaction
// that reserved its message, so while it stalls past its visibility
// timeout and lease, the message stays locked and another worker finds
// nothing to take; when the node returns, its steps commit and the job
// finishes as if it had been quick.
func TestFoldedStallKeepsItsMessage(t *testing.T) {
	t.Parallel()
	r := newRigOn(t, postgresBackend)
	stall, entered := make(chan struct{}), make(chan struct{}, 1)
	node := runtime.Typed(runtime.NodeInfo{ID: "t.node"}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
		entered <- struct{}{}
		<-stall
		return in, nil
	})
	a := New(r.store, Options{Owner: "A", Visibility: 5 * time.Second, LeaseTTL: 5 * time.Second, Now: r.clock.Now})
	bw := New(r.store, Options{Owner: "B", Visibility: 5 * time.Second, LeaseTTL: 5 * time.Second, Now: r.clock.Now})
	for _, e := range []*Engine{a, bw} {
		if err := e.Register(&runtime.Flow{Name: "race", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: node}}}); err != nil {
			t.Fatal(err)
		}
	}
	job, err := a.Start(context.Background(), "race", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	aErr := make(chan error, 1)
	go func() { _, err := a.Step(context.Background()); aErr <- err }()
	<-entered
	r.clock.Advance(6 * time.Second)
	did, err := bw.Step(context.Background())
	close(stall)
	if did || err != nil {
		t.Fatalf("B took the message of a folded delivery still running: %v %v", did, err)
	}
	if err := <-aErr; err != nil {
		t.Fatalf("A: %v", err)
	}
	if st, err := a.Status(context.Background(), job); err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("%+v %v", st, err)
	}
}
