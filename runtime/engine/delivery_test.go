package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// withDelivery is the order flow with the route -> charge edge set to d.
func withDelivery(s *sink, d runtime.Delivery) *runtime.Flow {
	f := orderFlow(s)
	for i := range f.Edges {
		if f.Edges[i].To == "charge" {
			f.Edges[i].Delivery, f.Edges[i].DedupeTTL = d, time.Hour
		}
	}
	return f
}

// runJob starts a job of flow with input, steps e until nothing is
// visible, and returns the job and its status.
func runJob(t *testing.T, e *Engine, flow, input string) (runtime.JobID, runtime.JobStatus) {
	t.Helper()
	job, err := e.Start(context.Background(), flow, json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return job, st
}

func runOrders(t *testing.T, r *rig, e *Engine, jobs int) []runtime.JobStatus {
	t.Helper()
	var out []runtime.JobStatus
	for range jobs {
		_, st := runJob(t, e, "orders", orderInput)
		out = append(out, st)
	}
	return out
}

func TestExactlyOnceEdgeDeduplicatesAcrossJobs(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{Now: r.clock.Now})
	if err := e.Register(withDelivery(r.sink, runtime.ExactlyOnce)); err != nil {
		t.Fatal(err)
	}
	sts := runOrders(t, r, e, 2)
	for _, st := range sts {
		if st.State != runtime.StateSucceeded || string(st.Result["charge"]) != `{"order_id":"from-lines","charged":600}` {
			t.Fatalf("%+v", st)
		}
	}
	for key, n := range r.sink.calls {
		if n != 1 {
			t.Fatalf("charge with key %s called %d times across two jobs of one order", key, n)
		}
	}
	// After the TTL the effect may run again (the sink still applies it
	// once, by its own idempotency).
	r.clock.Advance(2 * time.Hour)
	runOrders(t, r, e, 1)
	for _, n := range r.sink.calls {
		if n != 2 {
			t.Fatalf("call count after the TTL: %v", r.sink.calls)
		}
	}

	// At least once: every job calls the sink, which deduplicates by key.
	r2 := newRig(t)
	e2 := New(r2.store, Options{})
	if err := e2.Register(withDelivery(r2.sink, runtime.AtLeastOnce)); err != nil {
		t.Fatal(err)
	}
	runOrders(t, r2, e2, 2)
	for _, n := range r2.sink.calls {
		if n != 2 {
			t.Fatalf("at-least-once calls: %v", r2.sink.calls)
		}
	}
	if len(r2.sink.effects()) != 1 {
		t.Fatalf("effects %v", r2.sink.effects())
	}
}

func TestAtMostOnceEdgeDoesNotRetryAnUncommittedAttempt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// Crash right after the charge ran (the last activation to reach
	// "worked"), before its result committed.
	worked := 0
	{
		probe := newRig(t)
		e := New(probe.store, Options{CrashPoint: func(p string) error {
			if p == CrashWorked {
				worked++
			}
			return nil
		}})
		if err := e.Register(withDelivery(probe.sink, runtime.AtMostOnce)); err != nil {
			t.Fatal(err)
		}
		runOrders(t, probe, e, 1)
	}
	seen := 0
	e := New(r.store, Options{Owner: "a", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, CrashPoint: func(p string) error {
		if p == CrashWorked {
			if seen++; seen == worked {
				return errCrash
			}
		}
		return nil
	}})
	if err := e.Register(withDelivery(r.sink, runtime.AtMostOnce)); err != nil {
		t.Fatal(err)
	}
	job, _ := e.Start(context.Background(), "orders", json.RawMessage(orderInput))
	if err := drain(t, e); !errors.Is(err, errCrash) {
		t.Fatalf("no crash: %v", err)
	}
	r.clock.Advance(11 * time.Second)
	heir := New(r.store, Options{Owner: "b"})
	if err := heir.Register(withDelivery(r.sink, runtime.AtMostOnce)); err != nil {
		t.Fatal(err)
	}
	if err := drain(t, heir); err != nil {
		t.Fatal(err)
	}
	st, _ := heir.Status(context.Background(), job)
	if st.State != runtime.StateFailed || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "NotDelivered") {
		t.Fatalf("%+v", st)
	}
	for key, n := range r.sink.calls {
		if n != 1 {
			t.Fatalf("at-most-once charge %s called %d times", key, n)
		}
	}
}

// TestAtMostOnceSurvivesAPause: a delivery handed back untried (its job
// paused) is not an attempt, so the at-most-once node runs once the job
// is resumed instead of failing as "not delivered".
func TestAtMostOnceSurvivesAPause(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			ctx := context.Background()
			e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
			// a pauses its own job while it runs, so the delivery of b
			// that a's steps commit enters (chain.go) meets the pause.
			var job runtime.JobID
			pausing := runtime.Typed(runtime.NodeInfo{ID: "t.pausing"},
				func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
					return in, e.Pause(context.Background(), job)
				})
			send := runtime.Typed(runtime.NodeInfo{ID: "t.send", Effects: runtime.Effectful},
				func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
			flow := &runtime.Flow{
				Name:  "once",
				Nodes: []*runtime.FlowNode{{Alias: "a", Runner: pausing}, {Alias: "b", Runner: send}},
				Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "b", Delivery: runtime.AtMostOnce}},
			}
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			var err error
			job, err = e.Start(ctx, "once", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if did, err := e.Step(ctx); !did || err != nil { // a runs, b is handed back
				t.Fatalf("a: %v %v", did, err)
			}
			err = r.store.View(ctx, func(tx store.ReadTx) error {
				pending, err := tx.Pending(WorkStream)
				if err == nil && (len(pending) != 1 || pending[0].Attempt != 0) {
					err = fmt.Errorf("pending %+v, want b handed back untried", pending)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Resume(ctx, job); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(time.Second)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			if st, err := e.Status(ctx, job); err != nil || st.State != runtime.StateSucceeded {
				t.Fatalf("%+v %v", st, err)
			}
		})
	}
}
