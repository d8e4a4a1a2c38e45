package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	core "github.com/flowgen-dev/flowgen/runtime/internal/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// TestPureStepsChainInOneBatch: one batch takes each job of the 3-node
// flow from its entry to its end (on PostgreSQL in the batch's one
// transaction, on bbolt one steps commit after the other, each entering
// the next step), each step still an activation of its own with one leg 2
// entry, and leaves no message behind.
func TestPureStepsChainInOneBatch(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
		if err := e.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		var jobs []runtime.JobID
		for range 3 {
			job, err := e.Start(ctx, "linear", json.RawMessage(`{"n":1}`))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job)
		}
		batches := 0
		for ; batches < 10; batches++ {
			n, err := e.StepBatch(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		if batches != 1 {
			t.Errorf("%d batches worked the jobs, want 1", batches)
		}
		for _, job := range jobs {
			st, err := e.Status(ctx, job)
			if err != nil || st.State != runtime.StateSucceeded || string(st.Result["c"]) != `{"n":1}` {
				t.Fatalf("job %s: %+v %v", job, st, err)
			}
			ledgers := activityLedgers(t, r.store, job)
			if len(ledgers) != 3 {
				t.Errorf("job %s: activations %v, want a, b and c", job, ledgers)
			}
			for act, l := range ledgers {
				if l%100_000_000 != 1 {
					t.Errorf("job %s: %s has %d leg 2 entries, want 1", job, act, l%100_000_000)
				}
			}
		}
		err := r.store.View(ctx, func(tx store.ReadTx) error {
			pending, err := tx.Pending(WorkStream)
			if err == nil && len(pending) != 0 {
				t.Errorf("%d messages left pending", len(pending))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestChainSurvivesEveryCrash: a chain of two pure steps before one with
// effects, crashed at every occurrence of every crash point (on
// PostgreSQL inside the chain's one transaction too), finishes with each
// step's result committed once.
func TestChainSurvivesEveryCrash(t *testing.T) {
	t.Parallel()
	flow := func(*sink) []*runtime.Flow {
		f := linearFlow()
		f.Nodes[2].Runner = runtime.Typed(runtime.NodeInfo{ID: "t.send", Effects: runtime.Effectful},
			func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
		return []*runtime.Flow{f}
	}
	crashEverywhereThrough(t, flow, "linear", `{"n":7}`,
		func(t *testing.T, r *rig, job runtime.JobID) {
			st, err := New(r.store, Options{}).Status(context.Background(), job)
			if err != nil || st.State != runtime.StateSucceeded || string(st.Result["c"]) != `{"n":7}` {
				t.Fatalf("job %+v (%v)", st, err)
			}
			for act, l := range activityLedgers(t, r.store, job) {
				if l%100_000_000 == 0 {
					t.Errorf("%s: no leg 2 entry committed (ledger %d)", act, l)
				}
			}
		},
		map[string][]core.Committer{"bolt": {core.RanAhead, core.Chained}, "postgres": {core.Chained, core.Folded},
			"postgres-one-writer": {core.Inline, core.RanAhead, core.Chained}})
}

// TestChainedStepCountsItsAttempts: a pure step that fails every time,
// chained onto its predecessor on PostgreSQL, is tried exactly as often as
// its retry policy says: the delivery that ran in its predecessor's batch
// counts as the first attempt, as a reserved delivery does.
func TestChainedStepCountsItsAttempts(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		calls := 0
		failing := runtime.Typed(runtime.NodeInfo{ID: "t.failing", RetryOwner: runtime.RetryOrchestrator, Retry: runtime.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 1, MaxInterval: time.Second, MaxAttempts: 3,
		}}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
			calls++
			return nil, runtime.Errorf(runtime.Transient, "failure %d", calls)
		})
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now, Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second})
		err := e.Register(&runtime.Flow{
			Name:  "failing",
			Nodes: []*runtime.FlowNode{{Alias: "a", Runner: noop}, {Alias: "b", Runner: failing}},
			Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "b"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		job, err := e.Start(ctx, "failing", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		for range 6 {
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(2 * time.Second)
		}
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtime.StateFailed {
			t.Fatalf("job %+v (%v), want failed", st, err)
		}
		if calls != 3 {
			t.Errorf("b was called %d times, want 3 (its policy's attempts)", calls)
		}
	})
}

// onEachBackend runs fn in parallel subtests, one per store backend,
// each on a fresh rig.
func onEachBackend(t *testing.T, fn func(t *testing.T, b backend, r *rig)) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b, newRigOn(t, b))
		})
	}
}

// TestStoppingWorkerHandsBackItsChainedStep: a worker that stops right
// after a steps commit entered the job's next step for it hands that step
// back untried, open to the next worker now rather than when its
// reservation would run out.
func TestStoppingWorkerHandsBackItsChainedStep(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		// Effectful, so that on PostgreSQL a does not fold: its steps
		// commit enters b, and the worker stops just after it.
		send := runtime.Typed(runtime.NodeInfo{ID: "t.send", Effects: runtime.Effectful},
			func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now, Visibility: time.Hour, CrashPoint: func(point string) error {
			if point == CrashAcked {
				stop()
			}
			return nil
		}})
		err := e.Register(&runtime.Flow{
			Name:  "two",
			Nodes: []*runtime.FlowNode{{Alias: "a", Runner: send}, {Alias: "b", Runner: send}},
			Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "b"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Start(context.Background(), "two", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.StepBatch(ctx, 1); err != nil {
			t.Fatal(err)
		}
		err = r.store.View(context.Background(), func(tx store.ReadTx) error {
			pending, err := tx.Pending(WorkStream)
			if err == nil && (len(pending) != 1 || pending[0].Attempt != 0 || pending[0].NotBefore.After(r.clock.Now())) {
				err = fmt.Errorf("pending %+v, want b handed back untried and visible now", pending)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// commitCounter counts the store's write transactions.
type commitCounter struct {
	store.Store
	updates atomic.Int64
}

func (c *commitCounter) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// countCommits wraps s so that its write transactions are counted; the
// wrapper has s's capabilities.
func countCommits(s store.Store) (store.Store, *commitCounter) {
	c := &commitCounter{Store: s}
	return c, c
}

// TestPureStepsRunAhead: a job of four pure steps costs its start, one
// claim and one commit on both stores. On PostgreSQL the batch folds them
// into its transaction; on bbolt the worker runs the three after the first
// ahead of their entries and commits all four steps together (ahead.go).
// Each activation still has exactly one entry and one result.
func TestPureStepsRunAhead(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		s, counted := countCommits(r.store)
		e := New(s, Options{Owner: "w", Now: r.clock.Now})
		flow := linearFlow()
		flow.Nodes = append(flow.Nodes, &runtime.FlowNode{Alias: "d", Runner: flow.Nodes[2].Runner})
		flow.Edges = append(flow.Edges, runtime.Edge{From: "c", FromPort: "out", To: "d"})
		if err := e.Register(flow); err != nil {
			t.Fatal(err)
		}
		job, err := e.Start(ctx, "linear", json.RawMessage(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		before := counted.updates.Load()
		if n, err := e.StepBatch(ctx, 1); n != 1 || err != nil {
			t.Fatalf("claimed %d: %v", n, err)
		}
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtime.StateSucceeded || string(st.Result["d"]) != `{"n":1}` {
			t.Fatalf("job %s: %+v %v", job, st, err)
		}
		if n := counted.updates.Load() - before; n > 2 {
			t.Errorf("the job's four pure steps took %d commits, want at most 2 (a claim and the run)", n)
		}
		ledgers := activityLedgers(t, r.store, job)
		if len(ledgers) != 4 {
			t.Errorf("activations %v, want a, b, c and d", ledgers)
		}
		for act, l := range ledgers {
			if l%100_000_000 != 1 {
				t.Errorf("%s has %d leg 2 entries, want 1", act, l%100_000_000)
			}
		}
	})
}
