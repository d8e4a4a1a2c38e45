package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/testharness"
)

// TestSilentSlowNodeIsNeverCalledTwiceAtOnce: under the default
// visibility, lease and timeout (30 s, 30 s, 1 min), an Effectful node
// that runs 35 s without a heartbeat keeps its job and its message: a
// second engine on the same store, and the first engine itself, find
// nothing to do while the call runs, and the node is called once. Time is
// a fake clock, on both stores.
func TestSilentSlowNodeIsNeverCalledTwiceAtOnce(t *testing.T) {
	t.Parallel()
	onClockedStores(t, silentSlowNode)
}

func silentSlowNode(t *testing.T, open func(now func() time.Time) (store.Store, error)) {
	clock := testharness.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := open(clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var calls, running, most atomic.Int32
	started, release := make(chan struct{}, 2), make(chan struct{})
	slow := runtime.Typed(runtime.NodeInfo{ID: "t.silent", Effects: runtime.Effectful, KeyFields: []string{"order"}},
		func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			started <- struct{}{}
			<-release // 35 s on the engines' clock, and not a heartbeat
			return json.RawMessage(`{"charged":true}`), nil
		})
	b := runtime.NewBuilder("silent")
	runtime.AddNode(b, "n", runtime.TypedNode[json.RawMessage, json.RawMessage]{Runner: slow}, runtime.NodeOptions{})
	flow, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// The defaults, but for the clock.
	first := engine.New(s, engine.Options{Owner: "first", Now: clock.Now, After: clock.After})
	second := engine.New(s, engine.Options{Owner: "second", Now: clock.Now, After: clock.After})
	for _, e := range []*engine.Engine{first, second} {
		if err := e.Register(flow); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	job, err := first.Start(ctx, "silent", json.RawMessage(`{"order":"o-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	stepped := make(chan error, 1)
	go func() { _, err := first.Step(ctx); stepped <- err }()
	<-started
	// 35 s, a second at a time, each once the engine's timers that fired
	// are armed again (a renewal commits before it arms the next).
	armed := 1 // the hold's timer, armed as the call starts
	for range 35 {
		for deadline := time.Now().Add(30 * time.Second); clock.Waiting() < armed; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the engine's timers were not armed again")
			}
		}
		armed = clock.Waiting()
		clock.Advance(time.Second)
	}
	for deadline := time.Now().Add(30 * time.Second); clock.Waiting() < armed; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine's timers were not armed again")
		}
	}
	type outcome struct {
		found bool
		err   error
	}
	var later []chan outcome
	for _, w := range []struct {
		name string
		e    *engine.Engine
	}{{"the second engine", second}, {"the first engine", first}} {
		again := make(chan outcome, 1)
		go func() {
			found, err := w.e.Step(ctx)
			again <- outcome{found, err}
		}()
		select {
		case <-started:
			t.Errorf("%s called the node while its first call still ran", w.name)
			later = append(later, again)
		case o := <-again:
			if o.err != nil || o.found {
				t.Errorf("%s found the running activation's message (%v)", w.name, o.err)
			}
		}
	}
	defer func() {
		for _, c := range later {
			<-c
		}
	}()
	close(release)
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	st, err := first.Status(ctx, job)
	if err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("status %+v (%v), want succeeded", st, err)
	}
	if calls.Load() != 1 || most.Load() != 1 {
		t.Errorf("the node was called %d times, %d at once; want once", calls.Load(), most.Load())
	}
}
