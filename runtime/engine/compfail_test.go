package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestCompensationFailurePolicy: the saga's ship step fails, so charge and
// then reserve are undone; the refund that undoes charge fails twice
// (Permanent) before it would succeed. continue goes on to release the
// stock, halt stops the chain there, retry tries the refund until it
// succeeds and then goes on. Both stores.
func TestCompensationFailurePolicy(t *testing.T) {
	for _, policy := range []runtime.CompensationFailure{runtime.CompensateContinue, runtime.CompensateHalt, runtime.CompensateRetry} {
		t.Run(string(policy), func(t *testing.T) {
			onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
				ctx := context.Background()
				var refunds atomic.Int64
				e, job := startRefusedRefund(t, r, policy, &refunds)
				for range 5 { // retries come back after 1 s, then 2 s
					if err := drain(t, e); err != nil {
						t.Fatal(err)
					}
					r.clock.Advance(3 * time.Second)
				}
				st, err := e.Status(ctx, job)
				if err != nil || st.State != runtime.StateFailed {
					t.Fatalf("status %+v (%v), want failed", st, err)
				}
				errs := strings.Join(st.Errors, "\n")
				effects := fmt.Sprint(r.sink.effects())
				released := strings.Contains(effects, "stock.release")
				switch policy {
				case runtime.CompensateContinue:
					if refunds.Load() != 1 || !released || !strings.Contains(errs, "refund refused") {
						t.Errorf("continue: %d refunds, effects %s, errors %q", refunds.Load(), effects, errs)
					}
				case runtime.CompensateHalt:
					if refunds.Load() != 1 || released || len(st.Compensated) != 0 ||
						!strings.Contains(errs, "compensation halted at step 1 of 2 (charge@<reserve): not undone: charge@<reserve, reserve@") {
						t.Errorf("halt: %d refunds, effects %s, compensated %v, errors %q", refunds.Load(), effects, st.Compensated, errs)
					}
				case runtime.CompensateRetry:
					if refunds.Load() != 3 || !released || strings.Contains(errs, "refund refused") ||
						!strings.Contains(effects, "payments.refund payments.charge:o-9") {
						t.Errorf("retry: %d refunds, effects %s, errors %q", refunds.Load(), effects, errs)
					}
				}
			})
		})
	}
}

// TestCompensationParksForAHuman: under CompensatePark the failing refund
// parks the job at the compensated node, charge. Approving retries it
// (the refund fails once more and parks again; approved again, it
// succeeds and the chain goes on to release the stock); rejecting gives
// it up at once and goes on. Every decision is in the history. Both
// stores.
func TestCompensationParksForAHuman(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approve", false: "reject"}[approve], func(t *testing.T) {
			onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
				ctx := context.Background()
				var refunds atomic.Int64
				e, job := startRefusedRefund(t, r, runtime.CompensatePark, &refunds)
				waitsAtCharge := func(round int) {
					t.Helper()
					if err := drain(t, e); err != nil {
						t.Fatal(err)
					}
					st, err := e.Status(ctx, job)
					if err != nil || st.State != runtime.StateRunning {
						t.Fatalf("round %d: status %+v (%v), want running, parked", round, st, err)
					}
					if w, err := e.Waiting(ctx, job); err != nil || fmt.Sprint(w) != "[charge]" {
						t.Fatalf("round %d: waiting %v (%v), want [charge]", round, w, err)
					}
					if strings.Contains(fmt.Sprint(r.sink.effects()), "stock.release") {
						t.Fatalf("round %d: the chain went on past the parked compensation", round)
					}
				}
				decide := func(approved bool) {
					t.Helper()
					if n, err := e.Signal(ctx, job, "charge", runtime.Decision{Approved: approved, By: "ops"}); err != nil || n != 1 {
						t.Fatalf("signal: %d %v", n, err)
					}
				}
				waitsAtCharge(1)
				if approve {
					decide(true)
					waitsAtCharge(2) // the retry failed too: parked again
					decide(true)
				} else {
					decide(false)
				}
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
				st, err := e.Status(ctx, job)
				if err != nil || st.State != runtime.StateFailed {
					t.Fatalf("status %+v (%v), want failed", st, err)
				}
				effects := fmt.Sprint(r.sink.effects())
				errs := strings.Join(st.Errors, "\n")
				if !strings.Contains(effects, "stock.release") {
					t.Errorf("the chain did not go on after the decision: effects %s", effects)
				}
				refunded := strings.Contains(effects, "payments.refund payments.charge:o-9")
				if approve && (refunds.Load() != 3 || !refunded) {
					t.Errorf("approve: %d refunds, effects %s", refunds.Load(), effects)
				}
				if !approve && (refunds.Load() != 1 || refunded || !strings.Contains(errs, "given up by a decision")) {
					t.Errorf("reject: %d refunds, effects %s, errors %q", refunds.Load(), effects, errs)
				}
				var parked, signaled int
				for _, ev := range inspected(t, r.store, job).History {
					switch {
					case ev.Event == runtime.EventParked && strings.Contains(ev.Detail, "compensation failed (Permanent: refund refused)"):
						parked++
					case ev.Event == runtime.EventSignaled && strings.Contains(ev.Detail, "by ops: "):
						signaled++
					}
				}
				if want := map[bool]int{true: 2, false: 1}[approve]; parked != want || signaled != want {
					t.Errorf("history: %d parked and %d signaled events, want %d each", parked, signaled, want)
				}
			})
		})
	}
}

// startRefusedRefund starts a saga whose ship step fails, under policy,
// with a refund (the undo of charge) refused twice (Permanent) before it
// succeeds; refunds counts its calls.
func startRefusedRefund(t *testing.T, r *rig, policy runtime.CompensationFailure, refunds *atomic.Int64) (*Engine, runtime.JobID) {
	t.Helper()
	f := sagaFlow(r.sink, true)
	f.OnCompensationFailure = policy
	f.Nodes[1].Compensate.Runner = runtime.Typed(runtime.NodeInfo{ID: "payments.refund", Effects: runtime.Effectful, KeySchema: "payments.refund@1"},
		func(ctx *runtime.Context, _ noParams, in chargeOut) (json.RawMessage, error) {
			if refunds.Add(1) <= 2 {
				return nil, runtime.Errorf(runtime.Permanent, "refund refused")
			}
			return json.RawMessage(`{}`), r.sink.apply(ctx.IdempotencyKey(), "payments.refund "+in.ChargeID)
		})
	e := New(r.store, Options{Now: r.clock.Now})
	if err := e.Register(f); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "saga", json.RawMessage(sagaInput))
	if err != nil {
		t.Fatal(err)
	}
	return e, job
}
