package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

type chargeOut struct {
	ChargeID string `json:"charge_id"`
	OrderID  string `json:"order_id"`
	Amount   int    `json:"amount"`
}

// sagaFlow: reserve (compensable) -> charge (compensable) -> ship, where
// ship fails permanently when shipFails, so both effects are undone,
// newest first.
func sagaFlow(s *sink, shipFails bool) *Flow {
	effect := func(id string) Runner {
		return Typed(NodeInfo{ID: id, Effects: Effectful, KeySchema: id + "@1", KeyFields: []string{"order_id"}},
			func(ctx *Context, _ noParams, in order) (chargeOut, error) {
				return chargeOut{ChargeID: id + ":" + in.OrderID, OrderID: in.OrderID, Amount: 10}, s.apply(ctx.IdempotencyKey(), id+" "+in.OrderID)
			})
	}
	undo := func(id string) *Compensation {
		return &Compensation{UndoKey: []string{"charge_id"}, Runner: Typed(NodeInfo{ID: id, Effects: Effectful, KeySchema: id + "@1"},
			func(ctx *Context, _ noParams, in chargeOut) (json.RawMessage, error) {
				return json.RawMessage(`{}`), s.apply(ctx.IdempotencyKey(), id+" "+in.ChargeID)
			})}
	}
	ship := Typed(NodeInfo{ID: "t.ship"}, func(ctx *Context, _ noParams, in chargeOut) (json.RawMessage, error) {
		if shipFails {
			return nil, Errorf(Permanent, "carrier refused the parcel")
		}
		return json.RawMessage(`{"shipped":true}`), nil
	})
	return &Flow{
		Name: "saga",
		Nodes: []*FlowNode{
			{Alias: "reserve", Runner: effect("stock.reserve"), Compensate: undo("stock.release")},
			{Alias: "charge", Runner: effect("payments.charge"), Compensate: undo("payments.refund")},
			{Alias: "ship", Runner: ship},
		},
		Edges: []Edge{
			{From: "reserve", FromPort: "out", To: "charge"},
			{From: "charge", FromPort: "out", To: "ship"},
		},
	}
}

// Each effect node's output carries the order id on to the next.
const sagaInput = `{"order_id":"o-9"}`

func checkSaga(t *testing.T, r *rig, job JobID) {
	t.Helper()
	st, err := New(r.store, Options{}).Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateFailed || fmt.Sprint(st.Compensated) != "[charge@<reserve reserve@]" {
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
	if st, _ := e2.Status(context.Background(), job2); st.State != StateSucceeded || len(st.Compensated) != 0 || len(r2.sink.effects()) != 2 {
		t.Fatalf("%+v %v", st, r2.sink.effects())
	}
}

// TestCompensationSurvivesEveryCrashPoint crashes the saga at every point
// and checks that every effect and every undo still happens exactly once.
func TestCompensationSurvivesEveryCrashPoint(t *testing.T) {
	crashEverywhere(t, func(s *sink) []*Flow { return []*Flow{sagaFlow(s, true)} }, "saga", sagaInput, checkSaga)
}
