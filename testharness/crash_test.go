package testharness_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/testharness"
)

// sink is an external system that applies each idempotency key once and
// counts every attempt.
type sink struct {
	mu      sync.Mutex
	applied map[string]string
	calls   int
}

func (s *sink) apply(key, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if _, ok := s.applied[key]; !ok {
		s.applied[key] = v
	}
}

func TestCrashPointsOverAFlow(t *testing.T) {
	t.Parallel()
	target := testharness.CrashTarget{
		Flow:  "orders",
		Input: json.RawMessage(`{"order_id":"o-1","cents":250}`),
		Setup: func(t testing.TB) testharness.CrashCase {
			s := &sink{applied: map[string]string{}}
			b := runtime.NewBuilder("orders")
			normalize := runtime.AddNode(b, "normalize", runtime.Inline("normalize", func(o order) (order, error) { return o, nil }), runtime.NodeOptions{})
			pay := runtime.AddNode(b, "charge", runtime.TypedNode[order, receipt]{Runner: runtime.Typed(chargeInfo, func(ctx *runtime.Context, _ struct{}, in order) (receipt, error) {
				s.apply(ctx.IdempotencyKey(), in.OrderID)
				return receipt{OrderID: in.OrderID}, nil
			})}, runtime.NodeOptions{})
			runtime.Connect(b, normalize.Out("out"), pay.In(), runtime.EdgeOptions{})
			flow, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			return testharness.CrashCase{
				Flows: []*runtime.Flow{flow},
				Check: func(t testing.TB, st runtime.JobStatus) {
					if st.State != runtime.StateSucceeded || string(st.Result["charge"]) != `{"order_id":"o-1","body":"","at":"","nonce":0}` {
						t.Fatalf("status %+v, result %s", st, st.Result["charge"])
					}
					if len(s.applied) != 1 || s.calls < 1 {
						t.Fatalf("effects %v after %d calls, want exactly one", s.applied, s.calls)
					}
				},
			}
		},
	}
	if n := testharness.CrashPoints(t, target); n < len(engine.CrashPoints) {
		t.Fatalf("%d crash cases, want at least one per point", n)
	}
}

func TestCrashPointsOverOneNode(t *testing.T) {
	t.Parallel()
	testharness.CrashPoints(t, testharness.CrashTarget{
		Flow:  "charge",
		Input: json.RawMessage(`{"order_id":"o-2","cents":10}`),
		Setup: func(t testing.TB) testharness.CrashCase {
			s := &sink{applied: map[string]string{}}
			node := runtime.Typed(chargeInfo, func(ctx *runtime.Context, _ struct{}, in order) (receipt, error) {
				s.apply(ctx.IdempotencyKey(), in.OrderID)
				return receipt{OrderID: in.OrderID}, nil
			})
			return testharness.CrashCase{
				Flows: []*runtime.Flow{testharness.NodeFlow("charge", node)},
				Check: func(t testing.TB, st runtime.JobStatus) {
					if st.State != runtime.StateSucceeded || len(s.applied) != 1 {
						t.Fatalf("status %+v, effects %v", st, s.applied)
					}
				},
			}
		},
	})
}
