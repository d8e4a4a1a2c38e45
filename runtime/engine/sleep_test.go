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

// sleepFlow: a -> nap -> b, where nap sleeps as s says.
func sleepFlow(s runtime.Sleep) *runtime.Flow {
	echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo"}, func(ctx *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	return &runtime.Flow{
		Name:  "nap",
		Nodes: []*runtime.FlowNode{{Alias: "a", Runner: echo}, {Alias: "nap", Sleep: &s}, {Alias: "b", Runner: echo}},
		Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "nap"}, {From: "nap", FromPort: "out", To: "b"}},
	}
}

// TestSleepWakesOnTime: a sleep parks its activation without holding a
// worker, survives a restart, wakes neither early nor late on the store's
// clock (a duration, or a time from the input), and a kill ends it at
// once; on both stores.
func TestSleepWakesOnTime(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		worker := func() *Engine { // a fresh process on a fresh store handle
			r.reopen()
			e := New(r.store, Options{Now: r.clock.Now})
			for _, f := range []*runtime.Flow{sleepFlow(runtime.Sleep{For: time.Hour}), sleepFlow(runtime.Sleep{Until: "at"})} {
				f.Name += map[bool]string{true: "-for", false: "-until"}[f.Nodes[1].Sleep.For > 0]
				if err := e.Register(f); err != nil {
					t.Fatal(err)
				}
			}
			return e
		}
		e := worker()
		wake := r.clock.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339Nano)
		forJob, _ := e.Start(ctx, "nap-for", json.RawMessage(`{}`))
		untilJob, _ := e.Start(ctx, "nap-until", json.RawMessage(fmt.Sprintf(`{"at":%q}`, wake)))
		killed, _ := e.Start(ctx, "nap-for", json.RawMessage(`{}`))
		running := func(e *Engine, jobs ...runtime.JobID) {
			t.Helper()
			for _, job := range jobs {
				if st, err := e.Status(ctx, job); err != nil || st.State != runtime.StateRunning {
					t.Fatalf("job %s: %+v (%v), want running", job, st, err)
				}
			}
		}
		if err := drain(t, e); err != nil { // returns: the sleeps hold no worker
			t.Fatal(err)
		}
		running(e, forJob, untilJob, killed)
		if st := activationStates(t, r.store, forJob)["nap@<a"]; st != runtime.ActivationParked {
			t.Errorf("sleeping activation is %q, want parked", st)
		}
		if w, err := e.Waiting(ctx, forJob); err != nil || len(w) != 0 {
			t.Errorf("a sleep waits for a decision: %v %v", w, err)
		}
		if _, err := e.Signal(ctx, forJob, "nap", runtime.Decision{Approved: true}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("signal to a sleep: %v, want not found", err)
		}
		if err := e.Kill(ctx, killed, "no more waiting"); err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Status(ctx, killed); err != nil || st.State != runtime.StateKilled {
			t.Errorf("killed sleeping job: %+v (%v), want killed at once", st, err)
		}

		r.clock.Advance(9 * time.Minute)
		e = worker()
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		running(e, forJob, untilJob)
		r.clock.Advance(2 * time.Minute) // past the until time
		e = worker()
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		running(e, forJob)
		if st, err := e.Status(ctx, untilJob); err != nil || st.State != runtime.StateSucceeded {
			t.Errorf("sleep until %s: %+v (%v), want succeeded", wake, st, err)
		}
		r.clock.Advance(48 * time.Minute) // 59 minutes in: not yet
		e = worker()
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		running(e, forJob)
		r.clock.Advance(2 * time.Minute)
		e = worker()
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Status(ctx, forJob); err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("sleep for 1h after 61m: %+v (%v), want succeeded", st, err)
		}
		in, err := e.Inspect(ctx, forJob)
		if err != nil {
			t.Fatal(err)
		}
		var fired string
		for _, ev := range in.History {
			if ev.Event == runtime.EventTimerFired {
				fired = ev.Act + " " + ev.Detail
			}
		}
		if !strings.HasPrefix(fired, "nap@<a woke at ") {
			t.Errorf("history of the sleep: %+v", in.History)
		}
	})
}

// TestSleepSurvivesEveryCrashPoint: a crash at any point of any delivery
// of a sleeping flow (the one that parks and sets the timer, the one the
// timer wakes) leaves a job that finishes exactly once, its timer fired
// once. The sleep's time is past, so one drain takes it all the way.
func TestSleepSurvivesEveryCrashPoint(t *testing.T) {
	t.Parallel()
	const input = `{"n":1,"at":"2000-01-01T00:00:00Z"}`
	flows := func(*sink) []*runtime.Flow { return []*runtime.Flow{sleepFlow(runtime.Sleep{Until: "at"})} }
	crashEverywhere(t, flows, "nap", input, func(t *testing.T, r *rig, job runtime.JobID) {
		st, err := New(r.store, Options{}).Status(context.Background(), job)
		if err != nil || st.State != runtime.StateSucceeded || string(st.Result["b"]) != input {
			t.Fatalf("%+v %v", st, err)
		}
		fired := 0
		for _, ev := range inspected(t, r.store, job).History {
			if ev.Event == runtime.EventTimerFired {
				fired++
			}
		}
		if fired != 1 {
			t.Errorf("the timer fired %d times", fired)
		}
	})
}
