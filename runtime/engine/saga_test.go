package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
)

type chargeOut struct {
	ChargeID string `json:"charge_id"`
	OrderID  string `json:"order_id"`
	Amount   int    `json:"amount"`
}

// sagaFlow: reserve (compensable) -> charge (compensable) -> ship, where
// ship fails permanently when shipFails, so both effects are undone,
// newest first.
func sagaFlow(s *sink, shipFails bool) *runtime.Flow {
	effect := func(id string) runtime.Runner {
		return runtime.Typed(runtime.NodeInfo{ID: id, Effects: runtime.Effectful, KeySchema: id + "@1", KeyFields: []string{"order_id"}},
			func(ctx *runtime.Context, _ noParams, in order) (chargeOut, error) {
				return chargeOut{ChargeID: id + ":" + in.OrderID, OrderID: in.OrderID, Amount: 10}, s.apply(ctx.IdempotencyKey(), id+" "+in.OrderID)
			})
	}
	undo := func(id string) *runtime.Compensation {
		return &runtime.Compensation{UndoKey: []string{"charge_id"}, Runner: runtime.Typed(runtime.NodeInfo{ID: id, Effects: runtime.Effectful, KeySchema: id + "@1"},
			func(ctx *runtime.Context, _ noParams, in chargeOut) (json.RawMessage, error) {
				return json.RawMessage(`{}`), s.apply(ctx.IdempotencyKey(), id+" "+in.ChargeID)
			})}
	}
	ship := runtime.Typed(runtime.NodeInfo{ID: "t.ship"}, func(ctx *runtime.Context, _ noParams, in chargeOut) (json.RawMessage, error) {
		if shipFails {
			return nil, runtime.Errorf(runtime.Permanent, "carrier refused the parcel")
		}
		return json.RawMessage(`{"shipped":true}`), nil
	})
	return &runtime.Flow{
		Name: "saga",
		Nodes: []*runtime.FlowNode{
			{Alias: "reserve", Runner: effect("stock.reserve"), Compensate: undo("stock.release")},
			{Alias: "charge", Runner: effect("payments.charge"), Compensate: undo("payments.refund")},
			{Alias: "ship", Runner: ship},
		},
		Edges: []runtime.Edge{
			{From: "reserve", FromPort: "out", To: "charge"},
			{From: "charge", FromPort: "out", To: "ship"},
		},
	}
}

// Each effect node's output carries the order id on to the next.
const sagaInput = `{"order_id":"o-9"}`

func checkSaga(t *testing.T, r *rig, job runtime.JobID) {
	t.Helper()
	st, err := New(r.store, Options{}).Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateFailed || fmt.Sprint(st.Compensated) != "[charge@<reserve reserve@]" {
		t.Fatalf("status %+v", st)
	}
	want := map[string]bool{"stock.reserve o-9": true, "payments.charge o-9": true,
		"payments.refund payments.charge:o-9": true, "stock.release stock.reserve:o-9": true}
	eff := r.sink.effects()
	if len(eff) != len(want) {
		t.Fatalf("effects %v", eff)
	}
	for _, v := range eff {
		if !want[v] {
			t.Fatalf("unexpected effect %q in %v", v, eff)
		}
	}
}

func TestCompensationRunsNewestFirstExactlyOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{})
	if err := e.Register(sagaFlow(r.sink, true)); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "saga", json.RawMessage(sagaInput))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	checkSaga(t, r, job)

	// No failure, no compensation.
	r2 := newRig(t)
	e2 := New(r2.store, Options{})
	if err := e2.Register(sagaFlow(r2.sink, false)); err != nil {
		t.Fatal(err)
	}
	job2, _ := e2.Start(context.Background(), "saga", json.RawMessage(sagaInput))
	if err := drain(t, e2); err != nil {
		t.Fatal(err)
	}
	if st, _ := e2.Status(context.Background(), job2); st.State != runtime.StateSucceeded || len(st.Compensated) != 0 || len(r2.sink.effects()) != 2 {
		t.Fatalf("%+v %v", st, r2.sink.effects())
	}
}

// TestCompensationSurvivesEveryCrashPoint crashes the saga at every point
// and checks that every effect and every undo still happens exactly once.
func TestCompensationSurvivesEveryCrashPoint(t *testing.T) {
	t.Parallel()
	crashEverywhere(t, func(s *sink) []*runtime.Flow { return []*runtime.Flow{sagaFlow(s, true)} }, "saga", sagaInput, checkSaga)
}

// TestCompensationOrderPastNineSteps runs a chain of twelve compensable
// steps and a failing last node: the undos run, and are reported, newest
// first, also past the ninth (chain positions used to be unpadded in keys
// scanned in byte order, so 10 sorted before 2).
func TestCompensationOrderPastNineSteps(t *testing.T) {
	t.Parallel()
	const steps = 12
	r := newRig(t)
	var undone []string
	flow := &runtime.Flow{Name: "long-saga"}
	for i := 1; i <= steps; i++ {
		alias := fmt.Sprintf("s%02d", i)
		flow.Nodes = append(flow.Nodes, &runtime.FlowNode{
			Alias: alias,
			Runner: runtime.Typed(runtime.NodeInfo{ID: "t." + alias}, func(ctx *runtime.Context, _ noParams, in order) (order, error) {
				return in, nil
			}),
			Compensate: &runtime.Compensation{Runner: runtime.Typed(runtime.NodeInfo{ID: "t.undo." + alias}, func(ctx *runtime.Context, _ noParams, in order) (json.RawMessage, error) {
				r.sink.mu.Lock()
				undone = append(undone, alias)
				r.sink.mu.Unlock()
				return json.RawMessage(`{}`), nil
			})},
		})
		if i > 1 {
			flow.Edges = append(flow.Edges, runtime.Edge{From: fmt.Sprintf("s%02d", i-1), FromPort: "out", To: alias})
		}
	}
	flow.Nodes = append(flow.Nodes, &runtime.FlowNode{Alias: "fail", Runner: runtime.Typed(runtime.NodeInfo{ID: "t.fail"}, func(ctx *runtime.Context, _ noParams, in order) (order, error) {
		return order{}, runtime.Errorf(runtime.Permanent, "the last step fails")
	})})
	flow.Edges = append(flow.Edges, runtime.Edge{From: fmt.Sprintf("s%02d", steps), FromPort: "out", To: "fail"})

	e := New(r.store, Options{})
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	_, st := runJob(t, e, flow.Name, sagaInput)
	var wantUndone, wantReported []string
	for i := steps; i >= 1; i-- {
		wantUndone = append(wantUndone, fmt.Sprintf("s%02d", i))
		if i == 1 {
			wantReported = append(wantReported, "s01@")
		} else {
			wantReported = append(wantReported, fmt.Sprintf("s%02d@<s%02d", i, i-1))
		}
	}
	if st.State != runtime.StateFailed || fmt.Sprint(st.Compensated) != fmt.Sprint(wantReported) {
		t.Errorf("state %s, compensated\n %v\nwant\n %v", st.State, st.Compensated, wantReported)
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if fmt.Sprint(undone) != fmt.Sprint(wantUndone) {
		t.Errorf("undos ran in the order\n %v\nwant\n %v", undone, wantUndone)
	}
}
