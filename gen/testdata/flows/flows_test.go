package flows

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// TestParentWaitsForReviewThenRunsTheChild runs the generated flows: the
// slug node, the checkpoint that parks the job until a decision, and the
// subflow that the approved value enters.
func TestParentWaitsForReviewThenRunsTheChild(t *testing.T) {
	parent, err := NewDemoParent(DefaultDemoParentConnectors())
	if err != nil {
		t.Fatal(err)
	}
	child, err := NewDemoChild(DefaultDemoChildConnectors())
	if err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := engine.New(store, engine.Options{Owner: "test"})
	for _, f := range []*runtime.Flow{parent, child} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	drain := func() {
		for range 1000 {
			if did, err := e.Step(ctx); err != nil {
				t.Fatal(err)
			} else if !did {
				return
			}
		}
	}
	job, err := e.Start(ctx, "demo.parent", json.RawMessage(`{"title": "Typed Flows"}`))
	if err != nil {
		t.Fatal(err)
	}
	drain()
	if status, _ := e.Status(ctx, job); status.State != runtime.StateRunning {
		t.Fatalf("before the review: %+v", status)
	}
	if n, err := e.Signal(ctx, job, "review", runtime.Decision{Approved: true, By: "editor"}); err != nil || n != 1 {
		t.Fatalf("signal: %d, %v", n, err)
	}
	drain()
	st, err := e.Status(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateSucceeded || string(st.Result["nested"]) != `{"again":{"slug":"typed-flows"}}` {
		t.Fatalf("after the review: %+v %s", st, st.Result["nested"])
	}
}

func TestInlineNodesRun(t *testing.T) {
	flow, err := NewDemoInline(DefaultDemoInlineConnectors())
	if err != nil {
		t.Fatal(err)
	}
	st := runJob(t, `{"title": "Größe zählt"}`, flow)
	if st.State != runtime.StateSucceeded || string(st.Result["count"]) != `{"runes":10}` {
		t.Fatalf("status %+v: %s", st, st.Result["count"])
	}
}

func TestFanOutOverSplitLines(t *testing.T) {
	flow, err := NewDemoFanout(DefaultDemoFanoutConnectors())
	if err != nil {
		t.Fatal(err)
	}
	// The middle line has no ASCII word and fails; the quorum of 1 holds.
	st := runJob(t, `{"text": "Hello World\n¡¿?!\nSecond Line"}`, flow)
	if st.State != runtime.StateSucceeded || string(st.Result["each"]) != `[{"slug":"hello-world"},null,{"slug":"second-line"}]` {
		t.Fatalf("status %+v: %s", st, st.Result["each"])
	}
}

// runJob runs one job of flow (registered with the others) to the end on a
// fresh embedded store and returns its status.
func runJob(t *testing.T, input string, flow *runtime.Flow, others ...*runtime.Flow) runtime.JobStatus {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := engine.New(store, engine.Options{Owner: "test"})
	for _, f := range append([]*runtime.Flow{flow}, others...) {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	job, err := e.Start(ctx, flow.Name, json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if did, err := e.Step(ctx); err != nil {
			t.Fatal(err)
		} else if !did {
			break
		}
	}
	st, err := e.Status(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLoopRunsEachPassInItsOwnAddress: the back edge repeats attempt until
// the switch says ready; one pass more than maxIterations fails the job.
func TestLoopRunsEachPassInItsOwnAddress(t *testing.T) {
	flow, err := NewDemoLoop(DefaultDemoLoopConnectors())
	if err != nil {
		t.Fatal(err)
	}
	// 1 first run + 5 passes back = 6 attempts at most.
	st := runJob(t, `{"need": 6}`, flow)
	if st.State != runtime.StateSucceeded || string(st.Result["report"]) != `{"after":6}` {
		t.Fatalf("six attempts: %+v %s", st, st.Result["report"])
	}
	st = runJob(t, `{"need": 7}`, flow)
	if st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, "\n"), "pass 6 exceeds maxIterations 5") {
		t.Fatalf("seven attempts: %+v", st)
	}
}

// TestTimerFlowSleeps runs the generated sleep node on a clock the test
// moves: the job waits at cool until 90 seconds have passed.
func TestTimerFlowSleeps(t *testing.T) {
	e, clock, advance := timerEngine(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	job, err := e.Start(ctx, "demo.timer", json.RawMessage(`{"title": "Wait For It"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, wait := range []time.Duration{0, 89 * time.Second, 2 * time.Second} {
		advance(wait)
		for {
			did, err := e.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !did {
				break
			}
		}
		st, err := e.Status(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if done := clock().Sub(st.Started) >= 90*time.Second; st.Done() != done {
			t.Fatalf("%s after the start: %+v", clock().Sub(st.Started), st)
		}
		if st.Done() && (st.State != runtime.StateSucceeded || string(st.Result["shout"]) != `{"text":"WAIT-FOR-IT"}`) {
			t.Fatalf("after the sleep: %+v %s", st, st.Result["shout"])
		}
	}
}

// TestTimerFlowSchedule: the flow's generated schedule is added when the
// flow is registered, and its 02:00 tick starts one job with the input the
// Flow IR declares, under the tick's job key.
func TestTimerFlowSchedule(t *testing.T) {
	e, clock, advance := timerEngine(t, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
	ctx := context.Background()
	for _, step := range []struct {
		advance time.Duration
		want    int
	}{{0, 0}, {30 * time.Minute, 0}, {31 * time.Minute, 1}, {time.Minute, 0}} {
		advance(step.advance)
		if n, err := e.StartDue(ctx); err != nil || n != step.want {
			t.Fatalf("at %s: started %d (%v), want %d", clock().Format(time.Kitchen), n, err, step.want)
		}
	}
	job, created, err := e.StartOnce(ctx, "demo.timer", "schedule/nightly/2026-01-01T02:00:00Z", nil)
	if err != nil || created {
		t.Fatalf("the 02:00 tick's job: %s created %v (%v), want it started by the schedule", job, created, err)
	}
	in, err := e.Inspect(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Input json.RawMessage }
	for _, en := range in.Entries {
		if en.Key == "meta" {
			if err := json.Unmarshal(en.Value, &meta); err != nil {
				t.Fatal(err)
			}
		}
	}
	if string(meta.Input) != `{"title":"Nightly Digest"}` {
		t.Fatalf("the tick's job input %s", meta.Input)
	}
}

// timerEngine is an engine with the generated timer flow on a store file,
// both on a clock that starts at start and moves only by advance.
func timerEngine(t *testing.T, start time.Time) (e *engine.Engine, clock func() time.Time, advance func(time.Duration)) {
	t.Helper()
	flow, err := NewDemoTimer(DefaultDemoTimerConnectors())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := start
	clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "jobs.db"), boltstore.Options{NoSync: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e = engine.New(store, engine.Options{Owner: "test", Now: clock})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	return e, clock, advance
}
