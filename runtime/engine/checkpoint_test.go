package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

func approvalFlow() *runtime.Flow {
	echo := func(id string) runtime.Runner {
		return runtime.Typed(runtime.NodeInfo{ID: id}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	}
	return &runtime.Flow{
		Name: "approval",
		Nodes: []*runtime.FlowNode{
			{Alias: "start", Runner: echo("t.start")},
			{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "ship it?"}},
			{Alias: "ship", Runner: echo("t.ship")},
			{Alias: "refuse", Runner: echo("t.refuse")},
		},
		Edges: []runtime.Edge{
			{From: "start", FromPort: "out", To: "approve"},
			{From: "approve", FromPort: "approved", To: "ship"},
			{From: "approve", FromPort: "rejected", To: "refuse"},
		},
	}
}

func TestCheckpointWaitsForSignal(t *testing.T) {
	t.Parallel()
	for _, approved := range []bool{true, false} {
		r := newRig(t)
		e := New(r.store, Options{})
		if err := e.Register(approvalFlow()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		job, err := e.Start(ctx, "approval", json.RawMessage(`{"order":"o-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if st, _ := e.Status(ctx, job); st.State != runtime.StateRunning {
			t.Fatalf("job did not wait at the checkpoint: %+v", st)
		}
		if _, err := e.Signal(ctx, job, "ship", runtime.Decision{Approved: true}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("signal to a node that is not a waiting checkpoint: %v", err)
		}
		if n, err := e.Signal(ctx, job, "approve", runtime.Decision{Approved: approved, By: "finance"}); err != nil || n != 1 {
			t.Fatalf("signal: %d %v", n, err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("%+v %v", st, err)
		}
		want, other := "ship", "refuse"
		if !approved {
			want, other = other, want
		}
		if string(st.Result[want]) != `{"order":"o-1"}` || st.Result[other] != nil {
			t.Fatalf("approved=%v: result %v", approved, st.Result)
		}
	}
}

func TestKillReleasesParkedCheckpoint(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{})
	if err := e.Register(approvalFlow()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, _ := e.Start(ctx, "approval", json.RawMessage(`{}`))
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(ctx, job, "order cancelled"); err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Status(ctx, job); st.State != runtime.StateKilled {
		t.Fatalf("killed job with a parked checkpoint: %+v", st)
	}
}

// TestCleanShutdownReleasesLeases: a worker that stops (Run returns) hands
// its jobs over at once instead of making the next worker wait out the
// lease; on both backends.
func TestCleanShutdownReleasesLeases(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			e := New(r.store, Options{Owner: "leaving", LeaseTTL: time.Hour})
			if err := e.Register(approvalFlow()); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			job, err := e.Start(ctx, "approval", json.RawMessage(`{"order":"o-2"}`))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx, 2) }()
			for { // until the job parks at its checkpoint
				var l store.Lease
				err := r.store.View(context.Background(), func(tx store.ReadTx) (err error) { l, err = tx.Lease(job[:]); return })
				if err == nil && l.Owner == "leaving" {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			acquire := func() error {
				return r.store.Update(context.Background(), func(tx store.Tx) error {
					_, err := tx.AcquireLease(job[:], "arriving", time.Minute)
					return err
				})
			}
			if err := acquire(); !errors.Is(err, store.ErrLeaseHeld) {
				t.Fatalf("while the first worker runs, another took its lease: %v", err)
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := acquire(); err != nil {
				t.Fatalf("after a clean shutdown the lease is still held: %v", err)
			}
		})
	}
}

// TestParkedActivationDeliveredAgain: a parked checkpoint has two
// messages, the one that parked and the one the signal published. Either
// may arrive again after the other completed the activation (a late
// redelivery); in both orders the activation completes once, the job
// succeeds and its semaphore ends at zero.
func TestParkedActivationDeliveredAgain(t *testing.T) {
	t.Parallel()
	for _, parkedFirst := range []bool{true, false} {
		r := newRig(t)
		e := New(r.store, Options{Owner: "w1"})
		if err := e.Register(approvalFlow()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		job, err := e.Start(ctx, "approval", json.RawMessage(`{"order":"o-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		reserve := func() store.Message {
			t.Helper()
			var m store.Message
			err := r.store.Update(ctx, func(tx store.Tx) error {
				ms, err := tx.Reserve(store.Claim{Stream: WorkStream, Owner: "w1", Visibility: time.Hour, Max: 1})
				if err == nil {
					m = ms[0]
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		process := func(m store.Message) {
			t.Helper()
			if err := e.core.Process(ctx, m); err != nil {
				t.Fatalf("parked first %v: %v", parkedFirst, err)
			}
		}
		process(reserve()) // start
		parked := reserve()
		process(parked) // approve parks
		if _, err := e.Signal(ctx, job, "approve", runtime.Decision{Approved: true}); err != nil {
			t.Fatal(err)
		}
		resumed := reserve()
		if parkedFirst {
			process(parked) // the decision is there: it completes the activation
			process(resumed)
		} else {
			process(resumed)
			process(parked)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtime.StateSucceeded || st.Result["ship"] == nil {
			t.Fatalf("parked first %v: %+v %v", parkedFirst, st, err)
		}
		if sem := counter(t, r.store, job, "sem"); sem != 0 {
			t.Fatalf("parked first %v: semaphore %d", parkedFirst, sem)
		}
		if w, err := e.Waiting(ctx, job); err != nil || len(w) != 0 {
			t.Fatalf("parked first %v: still waiting at %v (%v)", parkedFirst, w, err)
		}
	}
}
