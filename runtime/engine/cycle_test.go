package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

type poll struct {
	Order string `json:"order"`
	Tries int    `json:"tries"`
	Need  int    `json:"need"`
	Ready bool   `json:"ready"`
}

// loopFlow polls an external system until it says ready: poll (effectful,
// keyed by order and try) -> ready? -- wait, back to poll (at most 2 passes
// back) -- yes -> done.
func loopFlow(s *sink) *runtime.Flow {
	pollNode := runtime.Typed(runtime.NodeInfo{ID: "shipping.poll", Effects: runtime.Effectful, Determinism: runtime.BestEffort,
		KeySchema: "shipping.poll@1", KeyFields: []string{"order", "tries"}},
		func(ctx *runtime.Context, _ noParams, in poll) (poll, error) {
			if err := s.apply(ctx.IdempotencyKey(), fmt.Sprintf("%s#%d", in.Order, in.Tries)); err != nil {
				return poll{}, err
			}
			in.Tries++
			in.Ready = in.Tries >= in.Need
			return in, nil
		})
	done := runtime.Typed(runtime.NodeInfo{ID: "shipping.done", Effects: runtime.Pure, Determinism: runtime.Strict},
		func(ctx *runtime.Context, _ noParams, in poll) (poll, error) { return in, nil })
	return &runtime.Flow{
		Name: "loop",
		Nodes: []*runtime.FlowNode{
			{Alias: "poll", Runner: pollNode},
			{Alias: "ready", Switch: &runtime.Switch{On: "ready", Cases: []runtime.Case{{Label: "yes", Equals: json.RawMessage(`true`)}}, Default: "wait"}},
			{Alias: "done", Runner: done},
		},
		Edges: []runtime.Edge{
			{From: "poll", FromPort: "out", To: "ready"},
			{From: "ready", FromPort: "wait", To: "poll", MaxIterations: 2},
			{From: "ready", FromPort: "yes", To: "done"},
		},
	}
}

// checkLoop: three polls (the first run and two passes back), each its
// effect once, each pass's activation in its own dimensional address.
func checkLoop(t *testing.T, r *rig, job runtime.JobID) {
	t.Helper()
	st, err := r.engine("checker", nil).Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateSucceeded || string(st.Result["done"]) != `{"order":"o-1","tries":3,"need":3,"ready":true}` {
		t.Fatalf("status %+v (result %s)", st, st.Result["done"])
	}
	var payloads []string
	for _, p := range r.sink.effects() {
		payloads = append(payloads, p)
	}
	slices.Sort(payloads)
	if strings.Join(payloads, " ") != "o-1#0 o-1#1 o-1#2" {
		t.Fatalf("effects %v, want one per pass", payloads)
	}
	for key, n := range r.sink.calls {
		if n > 1 {
			t.Logf("key %s called %d times (the sink deduplicated)", key, n)
		}
	}
	stored, ledgers := counters(t, r.store, job), activityLedgers(t, r.store, job)
	if sem := stored["sem"]; sem != 0 {
		t.Fatalf("semaphore %d", sem)
	}
	// Each pass has activity ledgers of its own: 3 polls, 3 switches
	// and done.
	for _, act := range []string{"poll@", "poll@/poll~1<ready", "poll@/poll~2<ready", "ready@<poll", "ready@/poll~2<poll", "done@/poll~2<ready"} {
		if v := ledgers[act]; v == 0 {
			t.Fatalf("activity ledger of %s: %d", act, v)
		}
	}
	n := 0
	for key := range stored {
		if strings.HasPrefix(key, "act/") {
			n++
		}
	}
	if n != 7 {
		t.Fatalf("%d activity ledgers, want 7", n)
	}
}

// TestLoopRunsEachPassInAFreshAddress, on every backend.
func TestLoopRunsEachPassInAFreshAddress(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			e := New(r.store, Options{Owner: "w"})
			if err := e.Register(loopFlow(r.sink)); err != nil {
				t.Fatal(err)
			}
			job, err := e.Start(context.Background(), "loop", json.RawMessage(`{"order":"o-1","tries":0,"need":3}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			checkLoop(t, r, job)
		})
	}
}

// TestLoopPastItsLimitFails: a fourth poll would be pass 3 of 2.
func TestLoopPastItsLimitFails(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{Owner: "w"})
	if err := e.Register(loopFlow(r.sink)); err != nil {
		t.Fatal(err)
	}
	job, err := e.Start(context.Background(), "loop", json.RawMessage(`{"order":"o-1","tries":0,"need":4}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(context.Background(), job)
	if st.State != runtime.StateFailed || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "PolicyDenied") || !strings.Contains(st.Errors[0], "pass 3 exceeds maxIterations 2") {
		t.Fatalf("status %+v", st)
	}
	if n := len(r.sink.effects()); n != 3 {
		t.Fatalf("%d polls happened, want 3", n)
	}
}

// TestEveryCrashPointInALoop: a crash anywhere in any pass converges to
// the clean run: every pass's effect once, nothing left open.
func TestEveryCrashPointInALoop(t *testing.T) {
	t.Parallel()
	crashEverywhere(t, func(s *sink) []*runtime.Flow { return []*runtime.Flow{loopFlow(s)} }, "loop", `{"order":"o-1","tries":0,"need":3}`, checkLoop)
}

// TestLoopUnderDuplicateDelivery: replayed back-edge messages land on the
// addresses their first delivery used, so the loop ends as a clean run.
func TestLoopUnderDuplicateDelivery(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			e := New(r.store, Options{Owner: "w1", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second})
			if err := e.Register(loopFlow(r.sink)); err != nil {
				t.Fatal(err)
			}
			job, err := e.Start(context.Background(), "loop", json.RawMessage(`{"order":"o-1","tries":0,"need":3}`))
			if err != nil {
				t.Fatal(err)
			}
			deliverRepeatedly(t, r, e)
			checkLoop(t, r, job)
		})
	}
}
