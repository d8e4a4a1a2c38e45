package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestRateLimitIsSharedByAllWorkers: a connector limited to 2 calls a
// second, burst 2, called by two processes on one store: together they
// make 2 calls, then 2 more a second later, and so on; a call that waits
// for its token spends no attempt.
func TestRateLimitIsSharedByAllWorkers(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var calls atomic.Int64
		limited := runtime.Typed(runtime.NodeInfo{ID: "t.limited", Effects: runtime.ReadOnly, RateLimit: runtime.RateLimit{QPS: 2, Burst: 2}},
			func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
				calls.Add(1)
				return in, nil
			})
		var procs []*Engine
		for _, owner := range []string{"a", "b"} {
			e := New(r.store, Options{Owner: owner, Now: r.clock.Now})
			if err := e.Register(&runtime.Flow{Name: "limited", Nodes: []*runtime.FlowNode{{Alias: "call", Runner: limited}}}); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, e)
		}
		var jobs []runtime.JobID
		for range 6 {
			job, err := procs[0].Start(ctx, "limited", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job)
		}
		for second, want := range []int64{2, 4, 6} {
			var wg sync.WaitGroup // both processes at once
			errs := make(chan error, len(procs))
			for _, e := range procs {
				wg.Go(func() {
					for {
						n, err := e.StepBatch(ctx, drainBatch)
						if err != nil || n == 0 {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			for range procs {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if got := calls.Load(); got != want {
				t.Fatalf("second %d: %d calls, want %d", second, got, want)
			}
			r.clock.Advance(time.Second)
		}
		for _, job := range jobs {
			st, err := procs[1].Inspect(ctx, job)
			if err != nil || st.Status.State != runtime.StateSucceeded || st.Tree[0].Attempts != 1 {
				t.Errorf("job %s: %+v %v, want succeeded on attempt 1", job, st.Status, err)
			}
		}
	})
}
