package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRateLimitIsSharedByAllWorkers: a connector limited to 2 calls a
// second, burst 2, called by two processes on one store: together they
// make 2 calls, then 2 more a second later, and so on; a call that waits
// for its token spends no attempt.
func TestRateLimitIsSharedByAllWorkers(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var calls atomic.Int64
		limited := Typed(NodeInfo{ID: "t.limited", Effects: ReadOnly, RateLimit: RateLimit{QPS: 2, Burst: 2}},
			func(ctx *Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
				calls.Add(1)
				return in, nil
			})
		var procs []*Engine
		for _, owner := range []string{"a", "b"} {
			e := New(r.store, Options{Owner: owner, Now: r.clock.Now})
			if err := e.Register(&Flow{Name: "limited", Nodes: []*FlowNode{{Alias: "call", Runner: limited}}}); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, e)
		}
		var jobs []JobID
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
			if err != nil || st.Status.State != StateSucceeded || st.Tree[0].Attempts != 1 {
				t.Errorf("job %s: %+v %v, want succeeded on attempt 1", job, st.Status, err)
			}
		}
	})
}
