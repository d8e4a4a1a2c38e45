package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// fanFailing fans out over items and fails the elements whose n is odd.
func fanFailing(agg runtime.Aggregate, quorum int) *runtime.Flow {
	work := runtime.Typed(runtime.NodeInfo{ID: "t.work"}, func(ctx *runtime.Context, _ noParams, in item) (item, error) {
		if in.N%2 == 1 {
			return item{}, runtime.Errorf(runtime.Permanent, "odd %d", in.N)
		}
		return in, nil
	})
	return &runtime.Flow{
		Name: "fan",
		Nodes: []*runtime.FlowNode{
			{Alias: "each", ForEach: &runtime.ForEach{Items: "items", Do: "work", Aggregate: agg, Quorum: quorum}},
			{Alias: "work", Runner: work},
			{Alias: "after", Runner: noop},
		},
		Edges: []runtime.Edge{{From: "each", FromPort: "out", To: "after"}},
	}
}

func TestForEachAggregatePolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agg    runtime.Aggregate
		quorum int
		items  string
		want   runtime.JobState
	}{
		{runtime.AggregateAll, 0, `[{"n":0},{"n":2}]`, runtime.StateSucceeded},
		{runtime.AggregateAll, 0, `[{"n":0},{"n":1}]`, runtime.StateFailed},
		{runtime.AggregateAny, 0, `[{"n":1},{"n":2},{"n":3}]`, runtime.StateSucceeded},
		{runtime.AggregateAny, 0, `[{"n":1},{"n":3}]`, runtime.StateFailed},
		{runtime.AggregateQuorum, 2, `[{"n":0},{"n":1},{"n":2}]`, runtime.StateSucceeded},
		{runtime.AggregateQuorum, 3, `[{"n":0},{"n":1},{"n":2}]`, runtime.StateFailed},
		{runtime.AggregateAll, 0, `[]`, runtime.StateSucceeded},
	} {
		t.Run(fmt.Sprintf("%s-%d-%s", tc.agg, tc.quorum, tc.items), func(t *testing.T) {
			r := newRig(t)
			e := New(r.store, Options{})
			if err := e.Register(fanFailing(tc.agg, tc.quorum)); err != nil {
				t.Fatal(err)
			}
			job, err := e.Start(context.Background(), "fan", json.RawMessage(`{"items":`+tc.items+`}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			st, _ := e.Status(context.Background(), job)
			if st.State != tc.want {
				t.Fatalf("state %s, want %s: %+v", st.State, tc.want, st)
			}
			if tc.want == runtime.StateSucceeded && tc.agg == runtime.AggregateAny && !strings.Contains(string(st.Result["after"]), "null") {
				t.Fatalf("failed elements are not null in the join output: %s", st.Result["after"])
			}
		})
	}
}

// windowFlow fans out over five items with at most two bodies in flight;
// each body applies an effect keyed by its element, and the join sums.
func windowFlow(s *sink, inFlight, peak *atomic.Int64) *runtime.Flow {
	work := runtime.Typed(runtime.NodeInfo{ID: "t.window", Effects: runtime.Effectful, KeySchema: "t.window@1", KeyFields: []string{"n"}},
		func(ctx *runtime.Context, _ noParams, in item) (item, error) {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			return in, s.apply(ctx.IdempotencyKey(), fmt.Sprint(in.N))
		})
	return &runtime.Flow{
		Name: "window",
		Nodes: []*runtime.FlowNode{
			{Alias: "each", ForEach: &runtime.ForEach{Items: "items", Do: "work", Concurrency: 2}},
			{Alias: "work", Runner: work},
			{Alias: "after", Runner: noop},
		},
		Edges: []runtime.Edge{{From: "each", FromPort: "out", To: "after"}},
	}
}

const windowInput = `{"items":[{"n":1},{"n":2},{"n":3},{"n":4},{"n":5}]}`

// TestForEachConcurrencyLimit runs many workers: never more than the limit
// of bodies run at once, every element runs once, outputs keep their order.
func TestForEachConcurrencyLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var inFlight, peak atomic.Int64
	e := New(r.store, Options{})
	if err := e.Register(windowFlow(r.sink, &inFlight, &peak)); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	job, err := e.Start(ctx, "window", json.RawMessage(windowInput))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, 8) }()
	var st runtime.JobStatus
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err = e.Status(ctx, job); err == nil && st.State != runtime.StateRunning {
			break
		}
	}
	stop()
	<-done
	if st.State != runtime.StateSucceeded {
		t.Fatalf("job: %+v", st)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("peak bodies in flight %d, limit 2", p)
	}
	if got := len(r.sink.effects()); got != 5 {
		t.Errorf("%d effects, want 5", got)
	}
}

// TestForEachWindowSurvivesEveryCrash: the windowed fan-out, crashed at
// every occurrence of every crash point, still runs each element exactly
// once and finishes.
func TestForEachWindowSurvivesEveryCrash(t *testing.T) {
	t.Parallel()
	crashEverywhere(t, func(s *sink) []*runtime.Flow {
		var inFlight, peak atomic.Int64
		return []*runtime.Flow{windowFlow(s, &inFlight, &peak)}
	}, "window", windowInput, func(t *testing.T, r *rig, job runtime.JobID) {
		st, err := New(r.store, Options{}).Status(context.Background(), job)
		if err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("job %+v (%v)", st, err)
		}
		if eff := r.sink.effects(); len(eff) != 5 {
			t.Fatalf("effects %v, want one per element", eff)
		}
		if got := string(st.Result["after"]); got != `[{"n":1},{"n":2},{"n":3},{"n":4},{"n":5}]` {
			t.Fatalf("outputs out of element order or missing: %s", got)
		}
	})
}

// TestShardedFanOutUnderDuplicateDelivery: a fan-out large enough to count
// its finished elements in shards, every message delivered 2 to 10 times
// and replayed out of order on both stores, runs each element's effect
// once, joins once with the outputs in element order, and finishes.
func TestShardedFanOutUnderDuplicateDelivery(t *testing.T) {
	t.Parallel()
	const elements = 40 // 6 shards: five of 7 and one of 5
	items := make([]item, elements)
	want := make([]string, elements)
	for i := range items {
		items[i].N = i
		want[i] = fmt.Sprintf(`{"n":%d}`, i)
	}
	input, err := json.Marshal(batch{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			r := newRigOn(t, b)
			e := r.engine("w1", nil)
			var inFlight, peak atomic.Int64
			flow := windowFlow(r.sink, &inFlight, &peak)
			flow.Name = "sharded"
			flow.Nodes[0].ForEach.Concurrency = 0
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			job, err := e.Start(context.Background(), "sharded", input)
			if err != nil {
				t.Fatal(err)
			}
			deliverRepeatedly(t, r, e)
			st, err := e.Status(context.Background(), job)
			if err != nil || st.State != runtime.StateSucceeded {
				t.Fatalf("job %+v (%v)", st, err)
			}
			if eff := r.sink.effects(); len(eff) != elements {
				t.Fatalf("%d effects, want one per element: %v", len(eff), eff)
			}
			if got := string(st.Result["after"]); got != "["+strings.Join(want, ",")+"]" {
				t.Fatalf("outputs out of element order or missing: %s", got)
			}
		})
	}
}

// TestFanOutBatchesDoNotDeadlock: three engines on one PostgreSQL store,
// as three worker processes, each claiming 16 messages a batch, work three
// 200-element fan-outs at once. Their batches take many bodies of one
// fan-out each and commit their shard counters concurrently; every job
// finishes, and no batch is ever chosen as a deadlock victim. Batches
// whose units ran in message order, locking shards in no common order,
// were chosen 139 times in three runs; batches that counted a shard on the
// forEach counter between two bodies, hundreds of times a run.
func TestFanOutBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer // the handler writes one record at a time
	log := slog.New(slog.NewTextHandler(&logged, nil))
	items := make([]item, 200)
	for i := range items {
		items[i].N = i
	}
	input, err := json.Marshal(batch{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	open := postgresBackend.open(t)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var engines []*Engine
	for i := range 3 {
		s, err := open(time.Now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e := New(s, Options{Owner: fmt.Sprintf("w%d", i), Batch: 16, Logger: log})
		if err := e.Register(fanFlow()); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
		wg.Go(func() { e.Run(ctx, 4) })
	}
	var jobs []runtime.JobID
	for _, e := range engines {
		job, err := e.Start(ctx, "fan", input)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	for _, job := range jobs {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		st, err := engines[0].Wait(wctx, job)
		cancel()
		if err != nil || st.State != runtime.StateSucceeded {
			t.Errorf("job %s: %+v %v", job, st, err)
		}
	}
	stop()
	wg.Wait()
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "deadlock") {
			t.Errorf("a batch deadlocked: %s", l)
		}
	}
}
