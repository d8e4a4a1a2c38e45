package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCompensationFailurePolicy: the saga's ship step fails, so charge and
// then reserve are undone; the refund that undoes charge fails twice
// (Permanent) before it would succeed. continue goes on to release the
// stock, halt stops the chain there, retry tries the refund until it
// succeeds and then goes on. Both stores.
func TestCompensationFailurePolicy(t *testing.T) {
	for _, policy := range []CompensationFailure{CompensateContinue, CompensateHalt, CompensateRetry} {
		t.Run(string(policy), func(t *testing.T) {
			onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
				ctx := context.Background()
				var refunds atomic.Int64
				f := sagaFlow(r.sink, true)
				f.OnCompensationFailure = policy
				f.Nodes[1].Compensate.Runner = Typed(NodeInfo{ID: "payments.refund", Effects: Effectful, KeySchema: "payments.refund@1"},
					func(ctx *Context, _ noParams, in chargeOut) (json.RawMessage, error) {
						if refunds.Add(1) <= 2 {
							return nil, Errorf(Permanent, "refund refused")
						}
						return json.RawMessage(`{}`), r.sink.apply(ctx.IdempotencyKey(), "payments.refund "+in.ChargeID)
					})
				e := New(r.store, Options{Now: r.clock.Now})
				if err := e.Register(f); err != nil {
					t.Fatal(err)
				}
				job, err := e.Start(ctx, "saga", json.RawMessage(sagaInput))
				if err != nil {
					t.Fatal(err)
				}
				for range 5 { // retries come back after 1 s, then 2 s
					if err := drain(t, e); err != nil {
						t.Fatal(err)
					}
					r.clock.Advance(3 * time.Second)
				}
				st, err := e.Status(ctx, job)
				if err != nil || st.State != StateFailed {
					t.Fatalf("status %+v (%v), want failed", st, err)
				}
				errs := strings.Join(st.Errors, "\n")
				effects := fmt.Sprint(r.sink.effects())
				released := strings.Contains(effects, "stock.release")
				switch policy {
				case CompensateContinue:
					if refunds.Load() != 1 || !released || !strings.Contains(errs, "refund refused") {
						t.Errorf("continue: %d refunds, effects %s, errors %q", refunds.Load(), effects, errs)
					}
				case CompensateHalt:
					if refunds.Load() != 1 || released || len(st.Compensated) != 0 ||
						!strings.Contains(errs, "compensation halted at step 1 of 2 (charge@<reserve): not undone: charge@<reserve, reserve@") {
						t.Errorf("halt: %d refunds, effects %s, compensated %v, errors %q", refunds.Load(), effects, st.Compensated, errs)
					}
				case CompensateRetry:
					if refunds.Load() != 3 || !released || strings.Contains(errs, "refund refused") ||
						!strings.Contains(effects, "payments.refund payments.charge:o-9") {
						t.Errorf("retry: %d refunds, effects %s, errors %q", refunds.Load(), effects, errs)
					}
				}
			})
		})
	}
}
