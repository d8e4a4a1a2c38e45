package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
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
	e := runtime.New(s, runtime.Options{Owner: "owner", LeaseTTL: ttl, Visibility: time.Hour, Timeout: time.Hour, Now: clock.Now, After: clock.After})
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
