package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// gate is a Pure task that waits until its channel is closed.
type gate chan struct{}

func (gate) Info() runtype.NodeInfo { return runtype.NodeInfo{ID: "t.gate"} }
func (g gate) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	select {
	case <-g:
		return c.Input, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestRunTakesOnTheJobsItsEngineStarts: a job started while the engine's
// Run works is taken on by that Run without a worker claiming it. The one
// worker of the Run is held by a job it claimed, so a started job that
// went to the stream would wait for it; the started job finishes first.
func TestRunTakesOnTheJobsItsEngineStarts(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	held := make(gate)
	for _, f := range []*Flow{
		{Name: "held", Nodes: []*Node{{Alias: "n", Task: held}}},
		{Name: "one", Nodes: []*Node{{Alias: "n", Task: echo{}}}},
	} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	blocking, err := e.Start(ctx, "held", json.RawMessage(`{}`)) // no Run yet: to the stream
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, e, 1)
	waitFor(t, "the worker to claim the held job", func() bool {
		b, err := s.Backlog(ctx, runtype.WorkStream)
		return err == nil && b.Ready == 0 && b.Pending == 1
	})
	job, err := e.Start(ctx, "one", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitSucceeded(t, e, job, "the job started while the only worker was held")
	close(held)
	waitSucceeded(t, e, blocking, "the held job")
}

// TestStoppedRunHandsStartsBack: entries a start committed for a Run that
// stopped before taking them on go back to the stream at once, their
// attempt not counted, and any worker finishes the job; while the Run's
// slots are all taken, a start is not taken on.
func TestStoppedRunHandsStartsBack(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{Visibility: time.Hour})
	if err := e.Register(&Flow{Name: "one", Nodes: []*Node{{Alias: "n", Task: echo{}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runCtx, stopRun := context.WithCancel(ctx)
	stopLocal := e.worker.runLocally(runCtx, limits{}, 1)
	run := e.worker.takeLocal()
	if run == nil {
		t.Fatal("no Run takes the start on")
	}
	if other := e.worker.takeLocal(); other != nil {
		t.Fatal("a second start was taken on with the Run's only slot in use")
	}
	c, err := e.flows.flow("one")
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.newStart(ctx, c, "", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var entered []*entry
	if err := s.Update(ctx, func(tx store.Tx) error {
		entered, err = e.writes.writeStart(tx, c, st, true)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(entered) != 1 {
		t.Fatalf("%d entries entered with the start, want 1", len(entered))
	}
	if b, err := s.Backlog(ctx, runtype.WorkStream); err != nil || b.Ready != 0 || b.Pending != 1 {
		t.Fatalf("backlog after the start %+v (%v), want its entry pending and reserved", b, err)
	}
	stopRun()
	run.takeOn(e.worker, entered)
	stopLocal()
	if e.worker.local.Load() != nil {
		t.Fatal("a stopped Run still takes starts on")
	}
	if b, err := s.Backlog(ctx, runtype.WorkStream); err != nil || b.Ready != 1 {
		t.Fatalf("backlog after the Run stopped %+v (%v), want the entry visible again", b, err)
	}
	stepUntilIdle(t, e, 1)
	status, err := e.Status(ctx, st.job)
	if err != nil || status.State != runtype.StateSucceeded {
		t.Fatalf("job %+v (%v), want succeeded", status, err)
	}
	in, err := e.Inspect(ctx, st.job)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.History) == 0 {
		t.Fatal("the job has no history")
	}
	for _, ev := range in.History {
		if ev.Attempt > 1 {
			t.Errorf("event %+v: the handed-back entry counted an attempt", ev)
		}
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// meeting is a Pure task whose calls return once two of them are in
// progress at the same time.
type meeting struct{ arrived, met chan struct{} }

func (meeting) Info() runtype.NodeInfo { return runtype.NodeInfo{ID: "t.meet"} }
func (m meeting) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	select {
	case m.arrived <- struct{}{}: // the first to arrive waits for the second
		select {
		case <-m.met:
			return c.Input, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case <-m.arrived:
		close(m.met)
		return c.Input, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestStartedEntriesRunTogether: the entry steps of a job that the Run
// takes on from its start run at the same time, as claimed ones do: the
// two entry nodes of this flow each wait for the other to be running.
func TestStartedEntriesRunTogether(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	m := meeting{arrived: make(chan struct{}), met: make(chan struct{})}
	if err := e.Register(&Flow{Name: "two", Nodes: []*Node{{Alias: "x", Task: m}, {Alias: "y", Task: m}}}); err != nil {
		t.Fatal(err)
	}
	runInBackground(t, e, 1)
	job, err := e.Start(context.Background(), "two", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitSucceeded(t, e, job, "the job whose entries wait for each other")
}

// runInBackground runs e with the given number of workers until the test
// ends, and returns once the Run takes starts on.
func runInBackground(t *testing.T, e *Engine, workers int) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, workers) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	waitFor(t, "the Run to take starts on", func() bool { return e.worker.local.Load() != nil })
}

// waitSucceeded waits up to 30 seconds for job to end, and fails the test
// unless it succeeded.
func waitSucceeded(t *testing.T, e *Engine, job runtype.JobID, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := e.Wait(ctx, job); err != nil || st.State != runtype.StateSucceeded {
		t.Fatalf("%s: %+v (%v), want it succeeded", what, st, err)
	}
}
