package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/fxamacker/cbor/v2"
)

// The engine's own tests: what only the protocol's internals can show.
// Behaviour through the node API is tested in package runtime.

// newEngine is an engine on a fresh embedded store, with a job id to use.
func newEngine(t *testing.T) (store.Store, *Engine, runtype.JobID) {
	t.Helper()
	s := openStore(t)
	job, err := runtype.NewJobID()
	if err != nil {
		t.Fatal(err)
	}
	return s, New(s, Options{}), job
}

// openStore is a fresh embedded store for one test.
func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "flowgen.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestEnterDerivesTheKindOfOldMessages: a message published before tasks
// carried their kind gets it from its activation id, and one whose id does
// not parse is poison.
func TestEnterDerivesTheKindOfOldMessages(t *testing.T) {
	t.Parallel()
	s, e, job := newEngine(t)
	for act, want := range map[string]protocol.Kind{"n@": protocol.Entry, "n@/2<m": protocol.Step, "e#join@": protocol.Join, "n@<m#undo": protocol.Undo, "garbage": 0} {
		payload, err := cbor.Marshal(task{Flow: "f", Node: "n", Act: act})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(context.Background(), func(tx store.Tx) error {
			en, err := e.writes.enter(tx, store.Message{ID: protocol.MessageID(job, act), Job: job[:], Payload: payload, Attempt: 1})
			if err != nil {
				return err
			}
			if en.t.Kind != want {
				t.Errorf("%s: kind %s, want %s", act, en.t.Kind, want)
			}
			return nil
		})
		if want == 0 {
			if !errors.Is(err, errPoison) {
				t.Errorf("%s: %v, want poison", act, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", act, err)
		}
	}
}

// TestJobIndexBackfill lists jobs written before the index existed.
func TestJobIndexBackfill(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	if err := e.Register(&Flow{Name: "approval", Nodes: []*Node{{Alias: "ok", Checkpoint: &runtype.Checkpoint{}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var jobs []runtype.JobID
	for range 3 {
		job, err := e.Start(ctx, "approval", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	// Remove the index, as a store from before it would be.
	err := s.Update(ctx, func(tx store.Tx) error {
		for _, j := range jobs {
			if err := tx.Delete(protocol.JobIndexKey(j)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Jobs(ctx, runtype.JobQuery{})
	if err != nil || len(l.Jobs) != 3 || l.Jobs[0].Job != jobs[2].String() {
		t.Fatalf("after backfill: %+v %v", l, err)
	}
}

// TestEntriesThatDoNotEnterCountNothing: a delivery at the leg 2 ceiling
// (which goes on uncounted, to fail its activation as Exhausted) and a
// delivery of a paused job (handed back) leave the activity ledger as
// they found it, though enter counts first and judges after.
func TestEntriesThatDoNotEnterCountNothing(t *testing.T) {
	t.Parallel()
	s, e, job := newEngine(t)
	if err := e.Register(&Flow{Name: "f", Nodes: []*Node{{Alias: "n", Task: echo{}}}}); err != nil {
		t.Fatal(err)
	}
	payload, err := cbor.Marshal(task{Flow: "f", Node: "n", Act: "n@", Kind: protocol.Entry})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		start int64
		setup func(tx store.Tx) error
	}{
		{"at the ceiling", ledger.MaxLeg2, func(store.Tx) error { return nil }},
		{"paused", 3, func(tx store.Tx) error { return tx.Put(protocol.PausedKey(job), nil) }},
	} {
		act := protocol.ActivityKey(job, "n@")
		m := store.Message{ID: protocol.MessageID(job, tc.name), Stream: runtype.WorkStream, Job: job[:], Payload: payload}
		err := s.Update(context.Background(), func(tx store.Tx) error {
			if err := tx.Delete(protocol.PausedKey(job)); err != nil {
				return err
			}
			if err := tx.Enqueue(m); err != nil {
				return err
			}
			if _, err := tx.Add(act, tc.start-mustCounter(t, tx, act), 1<<50); err != nil {
				return err
			}
			return tc.setup(tx)
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(context.Background(), func(tx store.Tx) error {
			ms, err := tx.Reserve(store.Claim{Stream: runtype.WorkStream, Owner: e.opts.Owner, Visibility: time.Minute, Max: 1})
			if err != nil {
				return err
			}
			en, err := e.writes.enter(tx, ms[0])
			if err != nil {
				return err
			}
			if exhausted := en.exhausted != ""; exhausted != (tc.start == ledger.MaxLeg2) {
				t.Errorf("%s: entry exhausted %v (%q)", tc.name, exhausted, en.exhausted)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s.View(context.Background(), func(tx store.ReadTx) error {
			if n, _ := tx.Counter(act); n != tc.start {
				t.Errorf("%s: activity ledger %d after the delivery, want %d", tc.name, n, tc.start)
			}
			return nil
		})
	}
}

func mustCounter(t *testing.T, tx store.ReadTx, key []byte) int64 {
	t.Helper()
	n, err := tx.Counter(key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// stepUntilIdle works e's stream, batches of up to max messages, until
// no message is visible.
func stepUntilIdle(t *testing.T, e *Engine, max int) {
	t.Helper()
	for {
		n, err := e.StepBatch(context.Background(), max)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// echo is a Pure task that returns its input.
type echo struct{}

func (echo) Info() runtype.NodeInfo { return runtype.NodeInfo{ID: "t.echo"} }
func (echo) Call(_ context.Context, c Call) (json.RawMessage, error) {
	return c.Input, nil
}

// TestFinishedJobsLeaveNoLeaseBehind: the engine keeps the leases of the
// jobs it works on to release them at shutdown, and forgets a job's lease
// when the job finishes, so a worker that runs for months does not grow
// with every job it ever ran.
func TestFinishedJobsLeaveNoLeaseBehind(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	if err := e.Register(&Flow{Name: "one", Nodes: []*Node{{Alias: "n", Task: echo{}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 5 {
		if _, err := e.Start(ctx, "one", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	stepUntilIdle(t, e, 2)
	held := 0
	e.writes.held.Range(func(_, _ any) bool { held++; return true })
	if held != 0 {
		t.Fatalf("%d leases kept after every job finished, want 0", held)
	}
}

// semaphoreWatcher is a task that records its job's semaphore each time
// it runs.
type semaphoreWatcher struct {
	s    store.Store
	job  *runtype.JobID
	seen *[]int64
}

func (semaphoreWatcher) Info() runtype.NodeInfo { return runtype.NodeInfo{ID: "t.watch"} }
func (w semaphoreWatcher) Call(ctx context.Context, c Call) (json.RawMessage, error) {
	err := w.s.View(ctx, func(tx store.ReadTx) error {
		n, err := tx.Counter(protocol.SemKey(*w.job))
		*w.seen = append(*w.seen, n)
		return err
	})
	return c.Input, err
}

// TestFanOutLeavesTheSemaphoreAlone: the bodies of a fan-out hold one
// count on the job semaphore between them, so the semaphore reads 1 in
// every body however many have finished (with all elements at once and
// with a concurrency limit), and the job still finishes after its join.
func TestFanOutLeavesTheSemaphoreAlone(t *testing.T) {
	t.Parallel()
	for _, window := range []int{0, 2} {
		s := openStore(t)
		e := New(s, Options{})
		var job runtype.JobID
		var seen []int64
		flow := &Flow{
			Name: "fan",
			Nodes: []*Node{
				{Alias: "each", ForEach: &runtype.ForEach{Items: "items", Do: "work", Concurrency: window}},
				{Alias: "work", Task: semaphoreWatcher{s, &job, &seen}},
				{Alias: "after", Task: echo{}},
			},
			Edges: []runtype.Edge{{From: "each", FromPort: "out", To: "after"}},
		}
		if err := e.Register(flow); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var err error
		job, err = e.Start(ctx, "fan", json.RawMessage(`{"items":[1,2,3,4,5]}`))
		if err != nil {
			t.Fatal(err)
		}
		stepUntilIdle(t, e, 1) // one at a time: seen needs no lock
		st, err := e.Status(ctx, job)
		if err != nil || st.State != runtype.StateSucceeded {
			t.Fatalf("window %d: job %+v %v", window, st, err)
		}
		if len(seen) != 5 {
			t.Fatalf("window %d: %d bodies ran, want 5", window, len(seen))
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("window %d: body %d saw the semaphore at %d, want 1 (%v)", window, i, n, seen)
			}
		}
	}
}

// TestSemaphoreDeltaKeepsEveryCount: each kind of activation moves the
// semaphore by the counts it opens less the one it closes, and bodies
// published before they were grouped keep a count each, so a job in
// flight across the upgrade still closes exactly once.
func TestSemaphoreDeltaKeepsEveryCount(t *testing.T) {
	t.Parallel()
	body := func(grouped bool) task {
		return task{Kind: protocol.Body, Element: &protocol.Element{ForEach: "each", Grouped: grouped}}
	}
	join := task{Kind: protocol.Join}
	step := task{Kind: protocol.Step}
	for _, c := range []struct {
		name     string
		t        task
		children []task
		want     int64
	}{
		{"last node", step, nil, -1},
		{"linear step", step, []task{step}, 0},
		{"branch of two", step, []task{step, step}, 1},
		{"fan-out of three", step, []task{body(true), body(true), body(true)}, 0},
		{"empty fan-out", step, []task{join}, 0},
		{"grouped body", body(true), nil, 0},
		{"grouped body starts the next", body(true), []task{body(true)}, 0},
		{"grouped body publishes the join", body(true), []task{join}, 0},
		{"older body", body(false), nil, -1},
		{"older body starts the next", body(false), []task{body(false)}, 0},
		{"older body publishes the join", body(false), []task{join}, 0},
	} {
		if got := semaphoreDelta(c.t, c.children); got != c.want {
			t.Errorf("%s: delta %d, want %d", c.name, got, c.want)
		}
	}
}

// TestShardOfCoversEveryElementOnce: the shards of a fan-out hold each
// element exactly once, their sizes add up to it, and no shard, nor the
// forEach's counter of shards, takes more than about √n commits.
func TestShardOfCoversEveryElementOnce(t *testing.T) {
	t.Parallel()
	for n := minShardedFanOut; n <= 1000; n++ {
		count := map[int]int{}
		sizes := map[int]int{}
		var shards int
		for i := range n {
			shard, size, all := shardOf(task{Kind: protocol.Body, Element: &protocol.Element{Grouped: true, Index: i, Expect: n}})
			if all == 0 || shard < 0 || shard >= all || (shards != 0 && all != shards) {
				t.Fatalf("n=%d element %d: shard %d of %d (%d before)", n, i, shard, all, shards)
			}
			shards = all
			count[shard]++
			sizes[shard] = size
		}
		limit := int(math.Ceil(math.Sqrt(float64(n))))
		if shards > limit {
			t.Fatalf("n=%d: %d shards, more than %d", n, shards, limit)
		}
		for s := range shards {
			if count[s] != sizes[s] || sizes[s] < 1 || sizes[s] > limit {
				t.Fatalf("n=%d shard %d: %d elements, size %d", n, s, count[s], sizes[s])
			}
		}
	}
	for _, small := range []protocol.Element{
		{Grouped: true, Expect: minShardedFanOut - 1},
		{Grouped: true, Expect: 100, Window: 4},
		{Grouped: false, Expect: 100},
	} {
		if _, _, shards := shardOf(task{Kind: protocol.Body, Element: &small}); shards != 0 {
			t.Errorf("%+v: %d shards, want the forEach's counter alone", small, shards)
		}
	}
}

// TestShardedFanOutCountsInShards: a fan-out of 40 (shards of ⌈√40⌉ = 7
// elements) finishes with its six shard counters at 7, 7, 7, 7, 7 and 5
// and the forEach's counter at 6.
func TestShardedFanOutCountsInShards(t *testing.T) {
	t.Parallel()
	s, e, _ := newEngine(t)
	flow := &Flow{
		Name: "fan",
		Nodes: []*Node{
			{Alias: "each", ForEach: &runtype.ForEach{Items: "items", Do: "work"}},
			{Alias: "work", Task: echo{}},
		},
	}
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	items := make([]int, 40)
	in, _ := json.Marshal(map[string][]int{"items": items})
	ctx := context.Background()
	job, err := e.Start(ctx, "fan", in)
	if err != nil {
		t.Fatal(err)
	}
	stepUntilIdle(t, e, 8)
	if st, err := e.Status(ctx, job); err != nil || st.State != runtype.StateSucceeded {
		t.Fatalf("job %+v %v", st, err)
	}
	forEach := runtype.EntryOf("each").String()
	err = s.View(ctx, func(tx store.ReadTx) error {
		if n := mustCounter(t, tx, protocol.AggregateKey(job, forEach)); n != 6 {
			t.Errorf("forEach counter %d, want 6 shards", n)
		}
		for shard := range 6 {
			want := int64(7)
			if shard == 5 {
				want = 5
			}
			if n := mustCounter(t, tx, protocol.AggregateShardKey(job, forEach, shard)); n != want {
				t.Errorf("shard %d counted %d, want %d", shard, n, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommitThatPublishesWakesItsProcess: a steps commit that publishes
// the job's next steps (kept for this worker, the lease holder, which the
// store tells no one about) passes the process's baton, and the steps that
// end the job pass nothing, so idle workers neither miss their own work
// nor poll for it. (A single next step would chain, published to nobody.)
func TestCommitThatPublishesWakesItsProcess(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	flow := &Flow{
		Name:  "two",
		Nodes: []*Node{{Alias: "a", Task: echo{}}, {Alias: "b", Task: echo{}}, {Alias: "c", Task: echo{}}},
		Edges: []runtype.Edge{{From: "a", FromPort: "out", To: "b"}, {From: "a", FromPort: "out", To: "c"}},
	}
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Start(ctx, "two", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	baton := newBaton()
	woken := func() bool {
		select {
		case <-baton.wait():
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		name string
		wake bool
	}{{"a, publishing b and c", true}, {"b", false}, {"c, ending the job", false}} {
		n, err := e.worker.stepBatch(ctx, 1, limits{wake: baton})
		if n != 1 || err != nil {
			t.Fatalf("%s: %d claimed, %v", step.name, n, err)
		}
		if got := woken(); got != step.wake {
			t.Errorf("%s: woke a worker %v, want %v", step.name, got, step.wake)
		}
	}
}

// TestChainingNeverHoldsAJobUp: when the next step's message exists
// already, so that publishing it reserved fails, the steps commit goes
// through without chaining and the job finishes.
func TestChainingNeverHoldsAJobUp(t *testing.T) {
	t.Parallel()
	s, e, job := startTwoSteps(t)
	ctx := context.Background()
	act := runtype.StepOf("b", "", "a").String()
	planted, err := protocol.TaskMessage(job, task{Kind: protocol.Step, Flow: "two", Node: "b", Act: act, Input: json.RawMessage(`{}`)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.Enqueue(planted) }); err != nil {
		t.Fatal(err)
	}
	stepUntilIdle(t, e, 1)
	st, err := e.Status(ctx, job)
	if err != nil || st.State != runtype.StateSucceeded {
		t.Fatalf("job %+v (%v), want succeeded", st, err)
	}
}

// startTwoSteps starts a job of "two", a flow of two echo steps a -> b, on
// a fresh store, and returns the store, its engine and the job.
func startTwoSteps(t *testing.T) (store.Store, *Engine, runtype.JobID) {
	t.Helper()
	s := openStore(t)
	e := New(s, Options{})
	flow := &Flow{
		Name:  "two",
		Nodes: []*Node{{Alias: "a", Task: echo{}}, {Alias: "b", Task: echo{}}},
		Edges: []runtype.Edge{{From: "a", FromPort: "out", To: "b"}},
	}
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "two", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	return s, e, job
}
