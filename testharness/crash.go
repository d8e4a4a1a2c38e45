package testharness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/crashpoint"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
)

// CrashCase is what one crash run needs, made fresh for every run so that
// each has its own effect counter.
type CrashCase struct {
	// Flows are registered on every engine of the run.
	Flows []*runtime.Flow
	// Capabilities grants capabilities to activations (engine.Options).
	Capabilities func(info runtime.NodeInfo) runtime.Capabilities
	// Check is called with the finished job's status once the run has
	// recovered; it asserts the outcome and that each effect happened
	// exactly once.
	Check func(t testing.TB, status runtime.JobStatus)
}

// CrashTarget describes a crash-point test.
type CrashTarget struct {
	// Setup makes a fresh case.
	Setup func(t testing.TB) CrashCase
	// Flow and Input start the job.
	Flow  string
	Input json.RawMessage
	// Open opens (or reopens) the store in dir with the given clock; the
	// default is the embedded bbolt store in dir.
	Open func(dir string, now func() time.Time) (store.Store, error)
}

// CrashPoints runs the job once to learn how often each of the runtime's
// crash points (engine.CrashPoints) is reached, failing if one is never
// reached, then, for every occurrence of every point, runs it again in a
// fresh store, crashes there, throws the process away (only the store
// survives), lets a new worker take over once visibility timeouts and
// leases have expired, and asserts that the job finished with no message
// left unacknowledged before calling Check. It returns the number of crash
// cases run. The runtime's own crash tests use the same driver
// (internal/crashpoint).
func CrashPoints(t *testing.T, target CrashTarget) int {
	t.Helper()
	if target.Open == nil {
		target.Open = func(dir string, now func() time.Time) (store.Store, error) {
			return boltstore.Open(filepath.Join(dir, "crash.db"), boltstore.Options{NoSync: true, Now: now})
		}
	}
	return crashpoint.Enumerate(t, crashpoint.Scenario{
		Points: engine.CrashPoints,
		Start: func(t *testing.T, hook func(string) error) (func(), error) {
			r := newCrashRun(t, target)
			t.Cleanup(r.close)
			doomed := r.engine("doomed", hook)
			job, err := doomed.Start(context.Background(), target.Flow, target.Input)
			if err != nil {
				t.Fatal(err)
			}
			return func() { r.recoverAndCheck(t, job) }, drain(doomed)
		},
	})
}

// recoverAndCheck reopens the store after a crash, lets a new worker
// finish the job once leases and visibility timeouts have run out, and
// checks that it finished with nothing left unacknowledged.
func (r *crashRun) recoverAndCheck(t *testing.T, job runtime.JobID) {
	t.Helper()
	r.reopen()                       // only the store survives
	r.clock.Advance(time.Minute + 1) // visibility timeouts and leases expire
	heir := r.engine("heir", nil)
	if err := drain(heir); err != nil {
		t.Fatalf("recovery: %v", err)
	}
	st, err := heir.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done() {
		t.Fatalf("after recovery the job is %s, not finished", st.State)
	}
	err = r.store.View(context.Background(), func(tx store.ReadTx) error {
		pending, err := tx.Pending(engine.WorkStream)
		if err == nil && len(pending) > 0 {
			err = fmt.Errorf("%d message(s) left unacknowledged", len(pending))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.c.Check(t, st)
}

type crashRun struct {
	t      testing.TB
	target CrashTarget
	c      CrashCase
	dir    string
	clock  *Clock
	store  store.Store
}

func newCrashRun(t testing.TB, target CrashTarget) *crashRun {
	r := &crashRun{t: t, target: target, c: target.Setup(t), dir: t.TempDir(), clock: NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	r.reopen()
	return r
}

func (r *crashRun) reopen() {
	r.t.Helper()
	r.close()
	s, err := r.target.Open(r.dir, r.clock.Now)
	if err != nil {
		r.t.Fatal(err)
	}
	r.store = s
}

func (r *crashRun) close() {
	if r.store != nil {
		r.store.Close()
		r.store = nil
	}
}

func (r *crashRun) engine(owner string, crash func(string) error) *engine.Engine {
	r.t.Helper()
	e := engine.New(r.store, engine.Options{Owner: owner, Visibility: time.Minute, LeaseTTL: time.Minute,
		CrashPoint: crash, Capabilities: r.c.Capabilities, Now: r.clock.Now})
	for _, f := range r.c.Flows {
		if err := e.Register(f); err != nil {
			r.t.Fatal(err)
		}
	}
	return e
}

// drain steps the engine until no message is visible.
func drain(e *engine.Engine) error {
	for range 100_000 {
		did, err := e.Step(context.Background())
		if err != nil {
			return err
		}
		if !did {
			return nil
		}
	}
	return errors.New("the engine did not drain in 100,000 steps")
}

// NodeFlow wraps one node in a flow of its own, named name, so that
// CrashPoints can run a single node: its result is under the alias "node".
func NodeFlow(name string, node runtime.Runner) *runtime.Flow {
	return &runtime.Flow{Name: name, Nodes: []*runtime.FlowNode{{Alias: "node", Runner: node}}}
}
