package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/ledger"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// crashingSaga is sagaFlow with a ship node that crashes its worker after
// every call, as a node that takes its process down would: the worker
// dies before it can record any outcome. calls counts the calls.
func crashingSaga(s *sink, calls *atomic.Int64, crash *atomic.Bool) *runtime.Flow {
	f := sagaFlow(s, false)
	// Effectful, so that no store runs it inside the transaction that
	// delivers it: a crash there rolls the delivery itself back.
	f.Nodes[2].Runner = runtime.Typed(runtime.NodeInfo{ID: "t.ship", Effects: runtime.Effectful}, func(ctx *runtime.Context, _ noParams, in chargeOut) (json.RawMessage, error) {
		calls.Add(1)
		crash.Store(true)
		return json.RawMessage(`{"shipped":true}`), nil
	})
	return f
}

var errCrashed = errors.New("worker crashed")

// sagaJob registers sagaFlow on a fresh engine on r and starts a job.
func sagaJob(t *testing.T, r *rig, shipFails bool) (*Engine, runtime.JobID) {
	t.Helper()
	e := New(r.store, Options{Now: r.clock.Now})
	if err := e.Register(sagaFlow(r.sink, shipFails)); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "saga", json.RawMessage(sagaInput))
	if err != nil {
		t.Fatal(err)
	}
	return e, job
}

// crashingWorkers returns a maker of worker processes of crashingSaga on
// r: one that crashes dies at CrashWorked after each call of ship (calls
// counts them), and a crash is for good, so each try takes a fresh one.
func crashingWorkers(t *testing.T, r *rig, calls *atomic.Int64) func(crashes bool) *Engine {
	var crash atomic.Bool
	return func(crashes bool) *Engine {
		e := New(r.store, Options{Owner: fmt.Sprint("w", crashes), Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second, Now: r.clock.Now,
			CrashPoint: func(point string) error {
				if crashes && point == CrashWorked && crash.Swap(false) {
					return errCrashed
				}
				return nil
			}})
		if err := e.Register(crashingSaga(r.sink, calls, &crash)); err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// TestCrashLoopFailsTheJob: a node that crashes its worker on every
// delivery is not delivered forever. Past its retry attempts and the
// allowance for crashed workers it fails as Exhausted, and its job fails
// by its error policy: the effects before it are compensated.
func TestCrashLoopFailsTheJob(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var calls atomic.Int64
		worker := func() *Engine { return crashingWorkers(t, r, &calls)(true) }
		job, err := worker().Start(ctx, "saga", json.RawMessage(sagaInput))
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; ; round++ {
			e := worker()
			err := drain(t, e)
			if err != nil && !errors.Is(err, errCrashed) {
				t.Fatal(err)
			}
			if st, err := e.Status(ctx, job); err != nil || st.Done() {
				break
			}
			if round == 50 {
				t.Fatalf("job still running after %d crashes", calls.Load())
			}
			r.clock.Advance(11 * time.Second) // the crashed delivery's reservation runs out
		}
		if want := int64(1 + 10); calls.Load() != want { // one attempt, ten crashes allowed
			t.Errorf("ship called %d times, want %d", calls.Load(), want)
		}
		failedWith(t, worker(), job, "Exhausted")
		checkSaga(t, r, job)
	})
}

// TestLedgerCeilingFailsTheJob: an activation whose activity ledger is at
// its ceiling can count no more deliveries. Its delivery fails it as
// Exhausted, and the job fails and compensates, instead of the message
// going to the dead-letter stream with the job left running.
func TestLedgerCeilingFailsTheJob(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e, job := sagaJob(t, r, false)
		err := r.store.Update(ctx, func(tx store.Tx) error {
			return tx.Bump(activityLedgerKey(job, "ship@<charge"), ledger.MaxLeg2, ledger.MaxValue)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		failedWith(t, e, job, "ceiling")
		checkSaga(t, r, job)
		if got := ledger.Activity(activityLedgers(t, r.store, job)["ship@<charge"]); got.Leg2Entries() != ledger.MaxLeg2 {
			t.Errorf("ship's activity ledger %s, want its entries left at the ceiling %d", got, ledger.MaxLeg2)
		}
		r.store.View(ctx, func(tx store.ReadTx) error {
			if dead, err := tx.Pending(WorkStream + store.DeadLetterSuffix); err != nil || len(dead) != 0 {
				t.Errorf("dead letters %v (%v), want none", dead, err)
			}
			return nil
		})
	})
}

// activityLedgerKey is the key of act's activity ledger in job, as the
// engine's key layout draws it (pid/<root>/act/<act>).
func activityLedgerKey(job runtime.JobID, act string) []byte {
	return fmt.Appendf(nil, "pid/%s/act/%s", base64.RawURLEncoding.EncodeToString(job[:]), act)
}

// TestDeadLettersCanBeRequeuedOrFailed: a message no worker takes on
// (here, its flow is registered on no worker yet) is left for a worker
// that has the flow, and after 15 minutes without one waits on the
// dead-letter stream, its job held up and inspection saying so. Requeued
// after the flow is deployed, it runs and the job succeeds; failed, its
// activation fails as DeadLettered and the job fails by its error policy.
// Each action is idempotent, and a dead letter taken one way cannot be
// taken the other.
func TestDeadLettersCanBeRequeuedOrFailed(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		stale := New(r.store, Options{Now: r.clock.Now}) // has no saga flow
		if err := stale.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		deployed := New(r.store, Options{Now: r.clock.Now})
		if err := deployed.Register(sagaFlow(r.sink, false)); err != nil {
			t.Fatal(err)
		}
		deadLetter := func() (runtime.JobID, runtime.DeadLetter) {
			t.Helper()
			job, err := deployed.Start(ctx, "saga", json.RawMessage(sagaInput))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, stale); err != nil {
				t.Fatal(err)
			}
			// The worker leaves the message for one that has the flow, and
			// says so; only when none took it for a while is it dead.
			if v := activationView(t, r.store, job, "reserve@"); !strings.Contains(v.Error, "waits for a worker with its flow definition saga#") {
				t.Errorf("inspection of the unserved activation: %+v", v)
			}
			if dead, err := deployed.DeadLetters(ctx); err != nil || len(dead) != 0 {
				t.Fatalf("dead letters %+v (%v) before the grace period", dead, err)
			}
			r.clock.Advance(16 * time.Minute)
			if err := drain(t, stale); err != nil {
				t.Fatal(err)
			}
			dead, err := deployed.DeadLetters(ctx)
			if err != nil || len(dead) != 1 {
				t.Fatalf("dead letters %+v (%v), want one", dead, err)
			}
			d := dead[0]
			if d.Job != job || d.Act != "reserve@" || d.Flow != "saga" || !strings.Contains(d.Reason, "saga") || string(d.Input) != sagaInput {
				t.Fatalf("dead letter %+v", d)
			}
			if st := activationStates(t, r.store, job)["reserve@"]; st != runtime.ActivationDeadLettered {
				t.Errorf("inspection: reserve@ is %q, want dead-lettered", st)
			}
			return job, d
		}

		job, d := deadLetter()
		next, err := deployed.RequeueDeadLetter(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := deployed.RequeueDeadLetter(ctx, d.ID); err != nil || again != next {
			t.Errorf("second requeue: %s (%v), want %s again", again, err, next)
		}
		if _, err := deployed.FailDeadLetter(ctx, d.ID, "too late"); !errors.Is(err, runtime.ErrDeadLetterTaken) {
			t.Errorf("failing a requeued dead letter: %v, want ErrDeadLetterTaken", err)
		}
		if err := drain(t, deployed); err != nil {
			t.Fatal(err)
		}
		if st, err := deployed.Status(ctx, job); err != nil || st.State != runtime.StateSucceeded {
			t.Fatalf("requeued job %+v (%v), want succeeded", st, err)
		}

		job, d = deadLetter()
		if _, err := deployed.FailDeadLetter(ctx, d.ID, "flow withdrawn"); err != nil {
			t.Fatal(err)
		}
		if _, err := deployed.RequeueDeadLetter(ctx, d.ID); !errors.Is(err, runtime.ErrDeadLetterTaken) {
			t.Errorf("requeueing a failed dead letter: %v, want ErrDeadLetterTaken", err)
		}
		if err := drain(t, deployed); err != nil {
			t.Fatal(err)
		}
		failedWith(t, deployed, job, "DeadLettered: flow withdrawn")

		if _, err := deployed.RequeueDeadLetter(ctx, runtime.MessageID{1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("requeueing no dead letter: %v, want ErrNotFound", err)
		}
		if dead, err := deployed.DeadLetters(ctx); err != nil || len(dead) != 0 {
			t.Errorf("dead letters left %+v (%v)", dead, err)
		}
	})
}

// TestUndecodableDeadLetterCannotFail: a message whose task does not
// decode names no activation to fail; requeued, it comes back.
func TestUndecodableDeadLetterCannotFail(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Now: r.clock.Now})
		job, err := runtime.NewJobID()
		if err != nil {
			t.Fatal(err)
		}
		err = r.store.Update(ctx, func(tx store.Tx) error {
			return tx.Enqueue(store.Message{ID: [16]byte{9}, Stream: WorkStream, Job: job[:], Payload: []byte{0xff, 0x00}})
		})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			dead, err := e.DeadLetters(ctx)
			if err != nil || len(dead) != 1 || dead[0].Job != job || dead[0].Act != "" || !strings.Contains(dead[0].Reason, "undecodable") {
				t.Fatalf("round %d: dead letters %+v (%v)", round, dead, err)
			}
			if _, err := e.FailDeadLetter(ctx, dead[0].ID, ""); !errors.Is(err, runtime.ErrUndecodable) {
				t.Fatalf("failing an undecodable dead letter: %v, want ErrUndecodable", err)
			}
			if _, err := e.RequeueDeadLetter(ctx, dead[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestRequeueSurvivesEveryCrashPoint: a worker (or an operator's command)
// that dies after the requeue's commit, or at any point of the requeued
// message's delivery, leaves a store from which the requeue, asked again,
// and another worker finish the job with every effect once.
func TestRequeueSurvivesEveryCrashPoint(t *testing.T) {
	crashEnumerate(t, append([]string{CrashRevived}, CrashPoints...),
		func(t *testing.T, r *rig, hook func(string) error) (func(), error) {
			ctx := context.Background()
			stale := New(r.store, Options{Now: r.clock.Now}) // has no saga flow
			if err := stale.Register(linearFlow()); err != nil {
				t.Fatal(err)
			}
			job, err := sagaWorker(t, r, "starter", nil).Start(ctx, "saga", json.RawMessage(sagaInput))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, stale); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(16 * time.Minute)
			if err := drain(t, stale); err != nil {
				t.Fatal(err)
			}
			dead, err := stale.DeadLetters(ctx)
			if err != nil || len(dead) != 1 {
				t.Fatalf("dead letters %+v (%v), want one", dead, err)
			}
			doomed := sagaWorker(t, r, "doomed", hook)
			if _, err = doomed.RequeueDeadLetter(ctx, dead[0].ID); err == nil {
				err = drain(t, doomed)
			}
			return func() {
				r.reopen()
				r.clock.Advance(11 * time.Second) // visibility and lease expire
				heir := sagaWorker(t, r, "heir", nil)
				if _, err := heir.RequeueDeadLetter(ctx, dead[0].ID); err != nil {
					t.Fatal(err)
				}
				if err := drain(t, heir); err != nil {
					t.Fatal(err)
				}
				if st, err := heir.Status(ctx, job); err != nil || st.State != runtime.StateSucceeded {
					t.Fatalf("job %+v (%v), want succeeded", st, err)
				}
				if eff := fmt.Sprint(r.sink.effects()); strings.Count(eff, "stock.reserve o-9") != 1 || strings.Count(eff, "payments.charge o-9") != 1 {
					t.Fatalf("effects %v, want the reservation and the charge once each", eff)
				}
			}, err
		})
}
