package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// TestStartOnceStartsOneJobPerKey: starts under one key, repeated and
// racing from two engines (on PostgreSQL two processes' store handles),
// create one job; every start gets its id, exactly one is told it created
// it, and after the job finished the key still names it. A key already
// used by another flow is refused, and other keys start jobs of their own.
func TestStartOnceStartsOneJobPerKey(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		// Another process on the same database, on PostgreSQL; one bbolt
		// file has one process, so there the second engine shares it.
		second := r.store
		if b.name != boltBackend.name {
			s, err := r.open(r.clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			second = s
		}
		var engines []*Engine
		for _, s := range []store.Store{r.store, second} {
			e := New(s, Options{Owner: "w", Now: r.clock.Now})
			for _, f := range []*runtime.Flow{linearFlow(), fanFlow()} {
				if err := e.Register(f); err != nil {
					t.Fatal(err)
				}
			}
			engines = append(engines, e)
		}
		const starts = 16
		ids := make([]runtime.JobID, starts)
		created := make([]bool, starts)
		errs := make([]error, starts)
		var wg sync.WaitGroup
		for i := range starts {
			wg.Go(func() {
				ids[i], created[i], errs[i] = engines[i%2].StartOnce(ctx, "linear", "order-42", json.RawMessage(`{"n":1}`))
			})
		}
		wg.Wait()
		firsts := 0
		for i := range starts {
			if errs[i] != nil {
				t.Fatalf("start %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("start %d got job %s, start 0 got %s", i, ids[i], ids[0])
			}
			if created[i] {
				firsts++
			}
		}
		if firsts != 1 {
			t.Fatalf("%d starts report creating the job, want 1", firsts)
		}
		if err := drain(t, engines[0]); err != nil {
			t.Fatal(err)
		}
		if st, err := engines[1].Status(ctx, ids[0]); err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("job %+v (%v)", st, err)
		}
		again, made, err := engines[1].StartOnce(ctx, "linear", "order-42", json.RawMessage(`{"n":2}`))
		if err != nil || made || again != ids[0] {
			t.Fatalf("start after the job finished: %s %v %v, want %s, not created", again, made, err, ids[0])
		}
		if _, _, err := engines[0].StartOnce(ctx, "fan", "order-42", json.RawMessage(`{"items":[]}`)); !errors.Is(err, runtime.ErrKeyInUse) {
			t.Fatalf("the key under another flow: %v, want ErrKeyInUse", err)
		}
		other, made, err := engines[0].StartOnce(ctx, "linear", "order-43", json.RawMessage(`{"n":1}`))
		if err != nil || !made || other == ids[0] {
			t.Fatalf("another key: %s %v %v, want a new job", other, made, err)
		}
		list, err := engines[0].Jobs(ctx, runtime.JobQuery{Flow: "linear"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Jobs) != 2 {
			t.Fatalf("%d jobs of the flow, want 2 (one per key): %+v", len(list.Jobs), list.Jobs)
		}
	})
}
