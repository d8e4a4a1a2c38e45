package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/crashpoint"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/runtime/store/storetest"
)

// keyedWrite is an Effectful task that records the idempotency key of
// every call, as a provider that deduplicates on it would see them.
type keyedWrite struct {
	mu   *sync.Mutex
	keys map[string]int
}

func (keyedWrite) Info() runtype.NodeInfo {
	return runtype.NodeInfo{ID: "t.write", Effects: flowtype.Effectful, KeySchema: "t.write@1", KeyFields: []string{"n"}}
}

func (w keyedWrite) Call(_ context.Context, c Call) (json.RawMessage, error) {
	w.mu.Lock()
	w.keys[c.Key]++
	w.mu.Unlock()
	return c.Input, nil
}

// TestLocalTakeOnSurvivesEveryCrashPoint: a job started while a Run takes
// starts on (its entry published reserved to the engine and entered in
// the start's commit, its next steps chained) crashes at every occurrence
// of every crash point of that path; a new worker on the same store, once
// the crashed one's visibility and lease ran out, finishes it with its
// result, and its effect went out under one key. The start's commit is
// what the path rests on: a crash after it leaves the entry reserved, and
// it is delivered again.
//
// It runs on bbolt and on PostgreSQL claiming no capabilities (oneWriter),
// where the take-on is otherwise never picked: the path's protocol holds
// on both stores.
func TestLocalTakeOnSurvivesEveryCrashPoint(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		open func(t *testing.T, clock *storetest.Clock) func() store.Store
	}{{"bolt", openBolt}, {"postgres-one-writer", openPostgresOneWriter}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			localTakeOnSurvivesEveryCrashPoint(t, b.open)
		})
	}
}

// openBolt returns the opener of a new bbolt store (each call a new
// handle on the same file).
func openBolt(t *testing.T, clock *storetest.Clock) func() store.Store {
	path := filepath.Join(t.TempDir(), "flowgen.db")
	return func() store.Store {
		s, err := boltstore.Open(path, boltstore.Options{NoSync: true, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// openPostgresOneWriter is openBolt for a new PostgreSQL schema, its
// handles claiming no capabilities.
func openPostgresOneWriter(t *testing.T, clock *storetest.Clock) func() store.Store {
	url := pgtest.FreshSchema(t)
	return func() store.Store {
		s, err := pgstore.Open(context.Background(), url, pgstore.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return oneWriter{s}
	}
}

// oneWriter is a store that claims no capabilities, as one with a single
// writer.
type oneWriter struct{ store.Store }

func (oneWriter) Capabilities() store.Capabilities { return store.Capabilities{} }

func localTakeOnSurvivesEveryCrashPoint(t *testing.T, open func(*testing.T, *storetest.Clock) func() store.Store) {
	var takenOn atomic.Int64 // deliveries the crashing engines' take-on committed
	cases := crashpoint.Enumerate(t, crashpoint.Scenario{
		Points: runtype.CrashPoints, // "reserved" is between the start's commit and the take-on
		Start: func(t *testing.T, hook func(string) error) (func(), error) {
			clock := storetest.NewClock()
			reopen := open(t, clock)
			s := reopen()
			write := keyedWrite{mu: &sync.Mutex{}, keys: map[string]int{}}
			flow := &Flow{
				Name:  "local",
				Nodes: []*Node{{Alias: "a", Task: echo{}}, {Alias: "w", Task: write}, {Alias: "c", Task: echo{}}},
				Edges: []runtype.Edge{{From: "a", FromPort: "out", To: "w"}, {From: "w", FromPort: "out", To: "c"}},
			}
			// The crashed process does nothing after its crash.
			var mu sync.Mutex
			crashed := make(chan struct{})
			dead := false
			crashHook := func(p string) error {
				mu.Lock()
				defer mu.Unlock()
				if dead {
					return crashpoint.ErrCrash
				}
				if err := hook(p); err != nil {
					dead = true
					close(crashed)
					return err
				}
				return nil
			}
			e := New(s, Options{Owner: "doomed", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, CrashPoint: crashHook, Now: clock.Now})
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			runCtx, stopRun := context.WithCancel(context.Background())
			stopLocal := e.worker.runLocally(runCtx, limits{}, 1)
			job, err := e.Start(context.Background(), "local", json.RawMessage(`{"n":7}`))
			if err != nil {
				t.Fatal(err)
			}
			finished := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				st, err := e.Wait(ctx, job)
				if err == nil && st.State != runtype.StateSucceeded {
					err = errors.New("the job ended " + string(st.State))
				}
				finished <- err
			}()
			var runErr error
			select {
			case <-crashed:
				runErr = crashpoint.ErrCrash
				s.Close() // the process is gone: only what it committed stays
			case runErr = <-finished:
			}
			stopRun()
			stopLocal() // waits for the work it took on
			takenOn.Add(CommittersUsed(e)[TakenOn.String()])
			if runErr == nil {
				// The points after the job's last commit are passed after
				// Wait may have seen that commit: a crash there shows now.
				select {
				case <-crashed:
					runErr = crashpoint.ErrCrash
				default:
				}
				s.Close()
			}
			return func() {
				s := reopen()
				defer s.Close()
				clock.Advance(11 * time.Second) // the crashed worker's visibility and lease run out
				heir := New(s, Options{Owner: "heir", Now: clock.Now})
				if err := heir.Register(flow); err != nil {
					t.Fatal(err)
				}
				stepUntilIdle(t, heir, 8)
				st, err := heir.Status(context.Background(), job)
				if err != nil || st.State != runtype.StateSucceeded || string(st.Result["c"]) != `{"n":7}` {
					t.Fatalf("job %+v (%v), want it succeeded with c's result", st, err)
				}
				write.mu.Lock()
				defer write.mu.Unlock()
				if len(write.keys) != 1 {
					t.Errorf("the effect went out under %d keys, want one: %v", len(write.keys), write.keys)
				}
			}, runErr
		},
	})
	if cases == 0 {
		t.Fatal("no crash case")
	}
	if takenOn.Load() == 0 {
		t.Error("no crashing engine committed through the local take-on: the enumeration never crossed it")
	}
}
