package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/testharness"
)

// These tests hold the engine to "a slow node is never called twice at
// once" on the paths where a delivery waits between its entry and its
// call, or runs nodes ahead of its commit: a claimed delivery waiting for
// a worker, one waiting for its batch's folded calls, nodes run ahead on
// bbolt, and a hold whose renewal fails once. Each moves a fake clock 35 s
// (past the 30 s default lease and visibility) while a call runs, lets a
// second engine or the same one step, and asserts that no activation was
// ever called twice at once. Time moves in steps, each once the engine's
// renewals committed; the real-time waits only bound a broken engine.

// probeTracker counts calls per (node, order), concurrent ones too, and
// lets the test release each call.
type probeTracker struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	calls   map[string]int
	gates   map[string]chan struct{}
	started chan string
}

func newProbeTracker() *probeTracker {
	return &probeTracker{running: map[string]int{}, most: map[string]int{}, calls: map[string]int{},
		gates: map[string]chan struct{}{}, started: make(chan string, 64)}
}

func (p *probeTracker) gate(k string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.gates[k]
	if !ok {
		g = make(chan struct{})
		p.gates[k] = g
	}
	return g
}

func (p *probeTracker) release(k string) { close(p.gate(k)) }

func (p *probeTracker) stats(k string) (calls, most int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[k], p.most[k]
}

// node returns a node that records its call under node+"/"+order and
// blocks until its gate (per key, or shared by every call of the key) is
// closed; block=false returns at once.
func (p *probeTracker) node(id string, fx runtime.Effects, block bool) runtime.Runner {
	return runtime.Typed(runtime.NodeInfo{ID: "t." + id, Effects: fx},
		func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) {
			var v struct {
				Order string `json:"order"`
			}
			json.Unmarshal(in, &v)
			k := id + "/" + v.Order
			p.mu.Lock()
			p.calls[k]++
			p.running[k]++
			if p.running[k] > p.most[k] {
				p.most[k] = p.running[k]
			}
			p.mu.Unlock()
			defer func() { p.mu.Lock(); p.running[k]--; p.mu.Unlock() }()
			p.started <- k
			if block {
				<-p.gate(k)
			}
			return in, nil
		})
}

// advanceBy moves the clock by total in steps of step, each once the
// engine's timers that fired are armed again (or after a short real-time
// wait when one is not re-armed: a hold that stopped).
func advanceBy(t *testing.T, clock *testharness.Clock, total, step time.Duration) {
	armed := clock.Waiting()
	for d := time.Duration(0); d < total; d += step {
		for deadline := time.Now().Add(5 * time.Second); clock.Waiting() < armed && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		}
		time.Sleep(20 * time.Millisecond) // let fired timers run their commits
		for deadline := time.Now().Add(5 * time.Second); clock.Waiting() < armed && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		}
		armed = clock.Waiting()
		clock.Advance(step)
	}
	time.Sleep(50 * time.Millisecond)
}

// twoEngines are engines A (on storeA) and B (on storeB), or A twice when
// same, on clock, without the retention sweeper, each running flows.
func twoEngines(t *testing.T, storeA, storeB store.Store, clock *testharness.Clock, same bool, flows ...*runtime.Flow) (a, b *engine.Engine) {
	t.Helper()
	a = engine.New(storeA, engine.Options{Owner: "A", Now: clock.Now, After: clock.After, SweepEvery: -1})
	b = engine.New(storeB, engine.Options{Owner: "B", Now: clock.Now, After: clock.After, SweepEvery: -1})
	if same {
		b = a
	}
	for _, e := range []*engine.Engine{a, b} {
		for _, f := range flows {
			if err := e.Register(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a, b
}

// stepAgainAndCheck lets engine b step while A's call of k still runs,
// asserts k was never called twice at once, then releases k and waits for
// A's step (stepA) and b's.
func stepAgainAndCheck(t *testing.T, p *probeTracker, b *engine.Engine, stepA chan error, k string) {
	t.Helper()
	stepB := make(chan error, 1)
	go func() { _, err := b.Step(context.Background()); stepB <- err }()
	if got, ok := expectStart(t, p, 2*time.Second); ok {
		t.Logf("B called %s", got)
	}
	calls, most := p.stats(k)
	if most > 1 {
		t.Errorf("%s called %d times, %d at once", k, calls, most)
	}
	p.release(k)
	t.Logf("A: %v; B: %v", <-stepA, <-stepB)
}

func expectStart(t *testing.T, p *probeTracker, within time.Duration) (string, bool) {
	select {
	case k := <-p.started:
		return k, true
	case <-time.After(within):
		return "", false
	}
}

func probeClock() *testharness.Clock {
	return testharness.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// TestClaimedDeliveryWaitingForAWorkerIsNotCalledTwice: on PostgreSQL a
// Run with one worker claims two jobs' slow Effectful calls in one batch;
// the second waits for the worker while the first runs 35 s. Another
// engine, or the same one, may take the waiting job over once its lease
// and reservation ran out, but then the first worker does not call it
// when its turn comes: its hold, due before the call, is fenced.
func TestClaimedDeliveryWaitingForAWorkerIsNotCalledTwice(t *testing.T) {
	for _, same := range []bool{false, true} {
		t.Run(map[bool]string{false: "other engine", true: "same engine"}[same], func(t *testing.T) { probeRunSlotWait(t, same) })
	}
}

func probeRunSlotWait(t *testing.T, same bool) {
	clock := probeClock()
	s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := newProbeTracker()
	flow := &runtime.Flow{Name: "fx", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: p.node("charge", runtime.Effectful, true)}}}
	a, b := twoEngines(t, s, s, clock, same, flow)
	ctx, cancel := context.WithCancel(context.Background())
	for _, o := range []string{"o-1", "o-2"} {
		if _, err := a.Start(ctx, "fx", json.RawMessage(`{"order":"`+o+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx, 1) }()
	first, ok := expectStart(t, p, 10*time.Second)
	if !ok {
		t.Fatal("no call")
	}
	other := "charge/o-1"
	if first == other {
		other = "charge/o-2"
	}
	if k, ok := expectStart(t, p, 500*time.Millisecond); ok {
		t.Fatalf("both ran at once (%s): no slot wait to probe", k)
	}
	advanceBy(t, clock, 35*time.Second, 5*time.Second)
	stepped := make(chan error, 1)
	go func() { _, err := b.Step(ctx); stepped <- err }()
	if k, ok := expectStart(t, p, 2*time.Second); ok {
		t.Logf("engine B called %s while A still held it in its batch", k)
	}
	p.release(first)
	if k, ok := expectStart(t, p, 2*time.Second); ok {
		t.Logf("engine A then called %s", k)
	}
	calls, most := p.stats(other)
	if most > 1 {
		t.Errorf("%s called %d times, %d at once", other, calls, most)
	}
	p.release(other)
	<-stepped
	cancel()
	<-ran
}

// TestNodesRunAheadAreNotCalledTwice: on bbolt n1 (Effectful, fast) ->
// n2 (ReadOnly, slow): n2 runs ahead of n1's commit, and the run holds
// n1's lease and message meanwhile, so no engine delivers n1 again and
// runs n2 a second time while the first run lasts.
func TestNodesRunAheadAreNotCalledTwice(t *testing.T) {
	for _, same := range []bool{false, true} {
		t.Run(map[bool]string{false: "other engine", true: "same engine"}[same], func(t *testing.T) { probeRunAheadReadOnly(t, same) })
	}
}

func probeRunAheadReadOnly(t *testing.T, same bool) {
	clock := probeClock()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "p.db"), boltstore.Options{NoSync: true, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := newProbeTracker()
	bld := runtime.NewBuilder("ahead")
	n1 := runtime.AddNode(bld, "n1", runtime.TypedNode[json.RawMessage, json.RawMessage]{Runner: p.node("charge", runtime.Effectful, false)}, runtime.NodeOptions{})
	n2 := runtime.AddNode(bld, "n2", runtime.TypedNode[json.RawMessage, json.RawMessage]{Runner: p.node("read", runtime.ReadOnly, true)}, runtime.NodeOptions{})
	runtime.Connect(bld, n1.Out("out"), n2.In(), runtime.EdgeOptions{})
	flow, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	a, b := twoEngines(t, s, s, clock, same, flow)
	ctx := context.Background()
	if _, err := a.Start(ctx, "ahead", json.RawMessage(`{"order":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	stepA := make(chan error, 1)
	go func() { _, err := a.Step(ctx); stepA <- err }()
	for range 2 {
		k, ok := expectStart(t, p, 10*time.Second)
		t.Logf("A called %s (%v)", k, ok)
	}
	t.Logf("timers armed while n2 runs ahead: %d", clock.Waiting())
	advanceBy(t, clock, 35*time.Second, 5*time.Second)
	stepB := make(chan error, 1)
	go func() { _, err := b.Step(ctx); stepB <- err }()
	for range 2 {
		if k, ok := expectStart(t, p, 2*time.Second); ok {
			t.Logf("B called %s", k)
		}
	}
	for _, k := range []string{"charge/o-1", "read/o-1"} {
		calls, most := p.stats(k)
		t.Logf("%s: %d calls, %d at once", k, calls, most)
		if most > 1 {
			t.Errorf("%s called %d at once, want never more than once", k, most)
		}
	}
	p.release("read/o-1")
	t.Logf("A: %v; B: %v", <-stepA, <-stepB)
}

// TestDeliveryWaitingForItsBatchIsNotCalledTwice: on PostgreSQL a Pure
// node runs 25 s inside the batch's transaction, holding back the
// Effectful delivery claimed with it; when that one's call starts, its
// lease and reservation have 5 s left, so its hold renews them before the
// call, and another engine finds nothing at +31 s.
func TestDeliveryWaitingForItsBatchIsNotCalledTwice(t *testing.T) {
	clock := probeClock()
	s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := newProbeTracker()
	pure := &runtime.Flow{Name: "pure", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: p.node("compute", runtime.Pure, true)}}}
	fx := &runtime.Flow{Name: "fx", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: p.node("charge", runtime.Effectful, true)}}}
	a, b := twoEngines(t, s, s, clock, false, pure, fx)
	ctx := context.Background()
	if _, err := a.Start(ctx, "pure", json.RawMessage(`{"order":"p-1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, "fx", json.RawMessage(`{"order":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	stepA := make(chan error, 1)
	go func() { n, err := a.StepBatch(ctx, 16); t.Logf("A claimed %d", n); stepA <- err }()
	k, _ := expectStart(t, p, 10*time.Second)
	t.Logf("A called %s", k)
	if k2, ok := expectStart(t, p, 500*time.Millisecond); ok {
		t.Fatalf("%s ran at once too: not the scenario", k2)
	}
	advanceBy(t, clock, 25*time.Second, 5*time.Second)
	p.release("compute/p-1")
	k, ok := expectStart(t, p, 10*time.Second)
	t.Logf("A then called %s (%v) at +25s", k, ok)
	advanceBy(t, clock, 6*time.Second, 2*time.Second) // +31 s: before the hold's first tick (+35 s)
	stepAgainAndCheck(t, p, b, stepA, "charge/o-1")
}

// flaky fails the next n Updates with a transient error.
type flaky struct {
	store.Store
	fail atomic.Int32
}

func (f *flaky) Update(ctx context.Context, fn func(store.Tx) error) error {
	if f.fail.Add(-1) >= 0 {
		return errors.New("transient: connection reset by peer")
	}
	return f.Store.Update(ctx, fn)
}

// TestHoldOutlivesAFailedRenewal: on bbolt one renewal of a running call's
// hold fails with a transient store error; the hold tries again and keeps
// the job, and another engine finds nothing at +35 s.
func TestHoldOutlivesAFailedRenewal(t *testing.T) {
	clock := probeClock()
	raw, err := boltstore.Open(filepath.Join(t.TempDir(), "p.db"), boltstore.Options{NoSync: true, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fs := &flaky{Store: raw}
	p := newProbeTracker()
	flow := &runtime.Flow{Name: "fx", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: p.node("charge", runtime.Effectful, true)}}}
	a, b := twoEngines(t, fs, raw, clock, false, flow)
	ctx := context.Background()
	if _, err := a.Start(ctx, "fx", json.RawMessage(`{"order":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	stepA := make(chan error, 1)
	go func() { _, err := a.Step(ctx); stepA <- err }()
	expectStart(t, p, 10*time.Second)
	fs.fail.Store(1) // the next Update is the hold's first renewal
	advanceBy(t, clock, 35*time.Second, 5*time.Second)
	stepAgainAndCheck(t, p, b, stepA, "charge/o-1")
}
