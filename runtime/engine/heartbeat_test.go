package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
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

// TestHeartbeatKeepsTheLease runs a node for several lease lifetimes while
// it heartbeats: another worker cannot take the job meanwhile, and the
// node's result commits. Time is a fake clock the node advances, one third
// of a lease at a time, waiting for each renewal to commit before the
// next: no sleeps, and the same interleaving on every machine.
func TestHeartbeatKeepsTheLease(t *testing.T) {
	t.Parallel()
	clock := testharness.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "hb.db"), boltstore.Options{NoSync: true, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const ttl = 30 * time.Second
	var job runtime.JobID
	leaseExpiry := func() time.Time {
		var l store.Lease
		err := s.View(context.Background(), func(tx store.ReadTx) error {
			var err error
			l, err = tx.Lease(job[:])
			return err
		})
		if err != nil {
			t.Errorf("reading the lease: %v", err)
		}
		return l.Expires
	}
	// waitFor polls a condition the engine's goroutines make true; the
	// real-time bound only keeps a broken engine from hanging the test.
	waitFor := func(what string, ok func() bool) {
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("gave up waiting until %s", what)
				return
			}
		}
	}
	stolen := make(chan error, 1)
	slow := runtime.Typed(runtime.NodeInfo{ID: "t.slow"}, func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) {
		// Four lease lifetimes, a third at a time; the thief tries after
		// two, when a lease nobody renewed would long have run out.
		for i := range 12 {
			ctx.Heartbeat()
			before := leaseExpiry()
			waitFor("the renewal timer is armed", func() bool { return clock.Waiting() > 0 })
			clock.Advance(ttl / 3)
			waitFor("the lease is renewed", func() bool { return leaseExpiry().After(before) })
			if i == 6 {
				stolen <- s.Update(context.Background(), func(tx store.Tx) error {
					_, err := tx.AcquireLease(job[:], "thief", ttl)
					return err
				})
			}
		}
		return json.RawMessage(`{"done":true}`), nil
	})
	e := engine.New(s, engine.Options{Owner: "owner", LeaseTTL: ttl, Visibility: time.Hour, Timeout: time.Hour, Now: clock.Now, After: clock.After})
	if err := e.Register(&runtime.Flow{Name: "slow", Nodes: []*runtime.FlowNode{{Alias: "n", Runner: slow}}}); err != nil {
		t.Fatal(err)
	}
	if job, err = e.Start(context.Background(), "slow", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(context.Background()); err != nil {
		t.Fatalf("the heartbeating worker was fenced out: %v", err)
	}
	if err := <-stolen; !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("another worker took the job of a heartbeating node: %v", err)
	}
	st, err := e.Status(context.Background(), job)
	if err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("%+v %v", st, err)
	}
}

// TestMissedHeartbeatFailsTheAttempt: a node that declares a heartbeat
// timeout and stops heartbeating has its attempt cancelled and failed as
// a timeout once the heartbeat timeout passes, long before the job's lease
// or the attempt's own timeout would run out; its retry policy then runs
// it again. Time is a fake clock, on both stores.
func TestMissedHeartbeatFailsTheAttempt(t *testing.T) {
	t.Parallel()
	onClockedStores(t, missedHeartbeat)
}

// onClockedStores runs fn, in parallel subtests, on bbolt and on
// PostgreSQL (a fresh schema), each store opened on the clock fn gives.
func onClockedStores(t *testing.T, fn func(t *testing.T, open func(now func() time.Time) (store.Store, error))) {
	stores := map[string]func(now func() time.Time) (store.Store, error){
		"bolt": func(now func() time.Time) (store.Store, error) {
			return boltstore.Open(filepath.Join(t.TempDir(), "engine.db"), boltstore.Options{NoSync: true, Now: now})
		},
		"postgres": func(now func() time.Time) (store.Store, error) {
			return pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{Now: now})
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open)
		})
	}
}

func missedHeartbeat(t *testing.T, open func(now func() time.Time) (store.Store, error)) {
	const (
		heartbeatTimeout = 8 * time.Second
		leaseTTL         = time.Minute
	)
	clock := testharness.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := open(clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	started, gaveUp := make(chan struct{}), make(chan struct{})
	stalls := runtime.Typed(runtime.NodeInfo{ID: "t.stalls", RetryOwner: runtime.RetryOrchestrator,
		Retry: runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second}},
		func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) {
			if ctx.Attempt() > 1 {
				return json.RawMessage(`{"done":true}`), nil
			}
			ctx.Heartbeat()
			close(started)
			<-ctx.Done() // stuck, and silent
			close(gaveUp)
			return nil, ctx.Err()
		})
	b := runtime.NewBuilder("stalls")
	runtime.AddNode(b, "n", runtime.TypedNode[json.RawMessage, json.RawMessage]{Runner: stalls}, runtime.NodeOptions{HeartbeatTimeout: heartbeatTimeout})
	flow, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(s, engine.Options{Owner: "w", LeaseTTL: leaseTTL, Visibility: time.Hour, Timeout: time.Hour, Now: clock.Now, After: clock.After})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "stalls", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	stepped := make(chan error, 1)
	go func() { _, err := e.Step(ctx); stepped <- err }()
	<-started
	// Move the clock a second at a time, each time once every engine timer
	// that fired is armed again, until the attempt is given up (the
	// heartbeat watch then arms no more).
	var silent time.Duration
	armed := 1
	for done := false; !done; {
		select {
		case <-gaveUp:
			done = true
		default:
			if clock.Waiting() < armed {
				time.Sleep(time.Millisecond)
				continue
			}
			if silent > leaseTTL {
				t.Fatalf("attempt still running %s after its last heartbeat", silent)
			}
			armed = clock.Waiting()
			clock.Advance(time.Second)
			silent += time.Second
		}
	}
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	if silent < heartbeatTimeout || silent > 2*heartbeatTimeout {
		t.Errorf("attempt given up %s after its last heartbeat, want between %s and %s", silent, heartbeatTimeout, 2*heartbeatTimeout)
	}
	clock.Advance(2 * time.Second) // the retry's backoff
	if _, err := e.Step(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx, job)
	if err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("status %+v (%v), want succeeded on the retry", st, err)
	}
	in, err := engine.InspectJob(ctx, s, job)
	if err != nil {
		t.Fatal(err)
	}
	var log string
	for _, en := range in.Entries {
		if strings.HasPrefix(en.Key, "log/") {
			log += string(en.Value)
		}
	}
	if !strings.Contains(log, "no heartbeat for 8s") || len(in.Tree) != 1 || in.Tree[0].Attempts != 2 {
		t.Errorf("attempt log %q, tree %+v: want the first attempt failed for want of a heartbeat", log, in.Tree)
	}
	var retried bool
	for _, ev := range in.History {
		retried = retried || ev.Event == runtime.EventRetrying && ev.Attempt == 1 && strings.Contains(ev.Detail, "no heartbeat for 8s; next attempt in 1s")
	}
	if !retried {
		t.Errorf("history %+v: want the retry of attempt 1", in.History)
	}
}
