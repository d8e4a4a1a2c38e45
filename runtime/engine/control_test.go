package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestKillBeatsPause: a paused job that is killed, and a killed job that
// is then paused, end killed without anyone resuming them.
func TestKillBeatsPause(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
		if err := e.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		for _, order := range []string{"pause, then kill", "kill, then pause"} {
			job, err := e.Start(ctx, "linear", json.RawMessage(`{"n":1}`))
			if err != nil {
				t.Fatal(err)
			}
			ops := []func() error{func() error { return e.Pause(ctx, job) }, func() error { return e.Kill(ctx, job, "stop") }}
			if order == "kill, then pause" {
				ops[0], ops[1] = ops[1], ops[0]
			}
			for _, op := range ops {
				if err := op(); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 { // a paused job's messages come back every 200 ms
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
				r.clock.Advance(time.Second)
			}
			st, err := e.Status(ctx, job)
			if err != nil || st.State != runtime.StateKilled {
				t.Errorf("%s: job %+v (%v), want killed", order, st, err)
			}
		}
	})
}

// TestPauseCascadesToSubflow: pausing a job holds the subflow job it
// started, and resuming it lets both finish.
func TestPauseCascadesToSubflow(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Now: r.clock.Now})
		for _, f := range subflowFlows(r.sink, 3) {
			if err := e.Register(f); err != nil {
				t.Fatal(err)
			}
		}
		job, err := e.Start(ctx, "outer", json.RawMessage(`{"note":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Step(ctx); err != nil { // a, and the subflow activation that starts the child
			t.Fatal(err)
		}
		child := childOf(t, e, job)
		if err := e.Pause(ctx, job); err != nil {
			t.Fatal(err)
		}
		list, err := e.Jobs(ctx, runtime.JobQuery{State: "paused", Subflows: true})
		if err != nil || len(list.Jobs) != 2 {
			t.Fatalf("paused jobs %+v (%v), want the parent and its child", list.Jobs, err)
		}
		for range 3 {
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(time.Second)
		}
		if st, err := e.Status(ctx, child); err != nil || st.State != runtime.StateRunning {
			t.Fatalf("child of a paused job: %+v (%v), want held, running", st, err)
		}
		if err := e.Resume(ctx, job); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(time.Second)
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		for _, j := range []runtime.JobID{child, job} {
			if st, err := e.Status(ctx, j); err != nil || st.State != runtime.StateSucceeded {
				t.Fatalf("job %s after resume: %+v (%v)", j, st, err)
			}
		}
	})
}

// TestKillOfAPausedJobCompensates: a saga paused while it waits at a
// checkpoint after two effects, then killed, ends killed with both
// effects undone, newest first, as a plain kill would, without anyone
// resuming it.
func TestKillOfAPausedJobCompensates(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		f := sagaFlow(r.sink, false)
		f.Nodes = append(f.Nodes, &runtime.FlowNode{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "ship?"}})
		f.Edges = []runtime.Edge{
			{From: "reserve", FromPort: "out", To: "charge"},
			{From: "charge", FromPort: "out", To: "approve"},
			{From: "approve", FromPort: "approved", To: "ship"},
		}
		e := New(r.store, Options{Now: r.clock.Now})
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
		job, err := e.Start(ctx, "saga", json.RawMessage(sagaInput))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if err := e.Pause(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := e.Kill(ctx, job, "order cancelled"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(time.Second)
		}
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtime.StateKilled || fmt.Sprint(st.Compensated) != "[charge@<reserve reserve@]" {
			t.Fatalf("status %+v (%v), want killed with charge and reserve undone", st, err)
		}
		effects := fmt.Sprint(r.sink.effects())
		if !strings.Contains(effects, "payments.refund payments.charge:o-9") || !strings.Contains(effects, "stock.release stock.reserve:o-9") {
			t.Errorf("effects %s, want the refund and the release", effects)
		}
	})
}
