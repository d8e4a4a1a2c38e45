package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// states lists the state of each element of the job's forEach "each".
func elementStates(t *testing.T, r *rig, job runtime.JobID) (string, *runtime.ActivationView) {
	t.Helper()
	in, err := InspectJob(context.Background(), r.store, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range in.Tree {
		if v.Node == "each" && v.Elements > 0 {
			var states []string
			for _, c := range v.Children {
				states = append(states, string(c.State))
			}
			return strings.Join(states, " "), v
		}
	}
	t.Fatalf("no forEach in the tree: %+v", in.Tree)
	return "", nil
}

// TestInspectShowsEachChildsState: a forEach of 5 with a window of 2,
// stepped by hand, shows its elements pending, enqueued, launched,
// succeeded and failed as they go.
func TestInspectShowsEachChildsState(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	f := fanFailing(runtime.AggregateAll, 0)
	f.Nodes[0].ForEach.Concurrency = 2
	e := New(r.store, Options{Owner: "w"})
	if err := e.Register(f); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "fan", json.RawMessage(`{"items":[{"n":0},{"n":1},{"n":2},{"n":4},{"n":6}]}`))
	if err != nil {
		t.Fatal(err)
	}
	step := func() {
		t.Helper()
		if did, err := e.Step(ctx); !did || err != nil {
			t.Fatalf("step: %v %v", did, err)
		}
	}
	step() // the forEach: elements 0 and 1 published
	if got, _ := elementStates(t, r, job); got != "enqueued enqueued pending pending pending" {
		t.Fatalf("after the fan-out: %s", got)
	}
	step() // element 0 succeeds, 2 is published
	step() // element 1 fails, 3 is published
	// The worker takes element 2 and is still at it.
	err = r.store.Update(ctx, func(tx store.Tx) error {
		_, err := tx.Reserve(store.Claim{Stream: WorkStream, Owner: "w", Visibility: time.Hour, Max: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Messages are not taken in publishing order, so which elements ran
	// varies; what each shows must not.
	got, fe := elementStates(t, r, job)
	count := map[string]int{}
	for i, c := range fe.Children {
		count[string(c.State)]++
		switch {
		case c.State == "failed" && (i != 1 || c.Error != "Permanent: odd 1" || c.Act != "work@/1<each" || c.LedgerWords == ""):
			t.Fatalf("failed element: %+v", c)
		case c.State == "succeeded" && i == 1:
			t.Fatalf("odd element succeeded: %+v", c)
		}
	}
	if count["succeeded"]+count["failed"] != 2 || count["launched"] != 1 || count["enqueued"] != 1 || count["pending"] != 1 {
		t.Fatalf("midway: %s", got)
	}
	r.clock.Advance(2 * time.Hour) // the taken message comes back
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	if got, fe := elementStates(t, r, job); got != "succeeded failed succeeded succeeded succeeded" || fe.State != "succeeded" {
		t.Fatalf("at the end: %s (forEach %s)", got, fe.State)
	}
}

// TestInspectShowsTimeoutAndCancel: an attempt that runs out of time is a
// timeout; what a kill stops is canceled.
func TestInspectShowsTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	slow := runtime.Typed(runtime.NodeInfo{ID: "t.slow", Timeout: 20 * time.Millisecond, RetryOwner: runtime.RetryNone},
		func(ctx *runtime.Context, _ noParams, in item) (item, error) {
			<-ctx.Done()
			return item{}, ctx.Err()
		})
	e := New(r.store, Options{Owner: "w"})
	err := e.Register(&runtime.Flow{Name: "slow", Nodes: []*runtime.FlowNode{{Alias: "s", Runner: slow}, {Alias: "after", Runner: noop}},
		Edges: []runtime.Edge{{From: "s", FromPort: "out", To: "after"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	timedOut, _ := e.Start(ctx, "slow", json.RawMessage(`{"n":1}`))
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	killed, _ := e.Start(ctx, "slow", json.RawMessage(`{"n":2}`))
	if err := e.Kill(ctx, killed, "test"); err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	for job, want := range map[runtime.JobID]string{timedOut: "timeout", killed: "canceled"} {
		in, err := InspectJob(ctx, r.store, job)
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Tree) != 1 || in.Tree[0].Act != "s@" || string(in.Tree[0].State) != want {
			t.Fatalf("%s: tree %+v, want s@ %s", want, in.Tree[0], want)
		}
	}
}

// TestInspectShowsParkedCheckpoint: a checkpoint waiting for a decision
// is parked.
func TestInspectShowsParkedCheckpoint(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{Owner: "w"})
	err := e.Register(&runtime.Flow{Name: "approve", Nodes: []*runtime.FlowNode{{Alias: "review", Checkpoint: &runtime.Checkpoint{Prompt: "ok?"}}, {Alias: "after", Runner: noop}},
		Edges: []runtime.Edge{{From: "review", FromPort: "approved", To: "after"}}})
	if err != nil {
		t.Fatal(err)
	}
	job, _ := e.Start(context.Background(), "approve", json.RawMessage(`{"n":1}`))
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	in, err := InspectJob(context.Background(), r.store, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Tree) != 1 || in.Tree[0].Act != "review@" || in.Tree[0].State != "parked" || in.Summary != "running, 1 open obligations" {
		t.Fatalf("tree %+v, summary %q", in.Tree, in.Summary)
	}
}
