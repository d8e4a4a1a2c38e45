package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

func startBudgeted(t *testing.T, r *rig, flows []*runtime.Flow, flow, input string) (*Engine, runtime.JobID) {
	t.Helper()
	e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
	for _, f := range flows {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	job, err := e.Start(context.Background(), flow, json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	return e, job
}

func spentBy(t *testing.T, r *rig, job runtime.JobID) int64 {
	t.Helper()
	return counter(t, r.store, job, "spent")
}

func failedWith(t *testing.T, e *Engine, job runtime.JobID, want string) {
	t.Helper()
	st, err := e.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, "\n"), want) {
		t.Fatalf("status %+v, want failed with %q", st, want)
	}
}

// TestBudgetBoundsActivations: the order flow takes 9 activations (normalize,
// lines, 3 prices, the join, total, route, charge). With 9 it succeeds;
// with 4 the prices past it and the join are refused, so the job fails
// and nothing is charged.
func TestBudgetBoundsActivations(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			enough := orderFlow(r.sink)
			enough.Budget = runtime.Budget{Activations: 9}
			e, job := startBudgeted(t, r, []*runtime.Flow{enough}, "orders", orderInput)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.assertFinished(job)
			if n := spentBy(t, r, job); n != 9 {
				t.Fatalf("spent %d activations, want 9", n)
			}

			r = newRigOn(t, b)
			short := orderFlow(r.sink)
			short.Budget = runtime.Budget{Activations: 4}
			e, job = startBudgeted(t, r, []*runtime.Flow{short}, "orders", orderInput)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			failedWith(t, e, job, "lines#join@: PolicyDenied: budget exhausted: activation 6 of a budget of 4")
			if eff := r.sink.effects(); len(eff) != 0 {
				t.Fatalf("effects %v after the budget ran out", eff)
			}
		})
	}
}

// TestBudgetDeadline: an activation that would begin after the job's
// deadline is refused.
func TestBudgetDeadline(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	f := orderFlow(r.sink)
	f.Budget = runtime.Budget{Timeout: time.Minute}
	e, job := startBudgeted(t, r, []*runtime.Flow{f}, "orders", orderInput)
	if did, err := e.Step(context.Background()); !did || err != nil {
		t.Fatalf("first step: %v %v", did, err)
	}
	r.clock.Advance(2 * time.Minute)
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	failedWith(t, e, job, "PolicyDenied: budget exhausted: the job's deadline")
	if eff := r.sink.effects(); len(eff) != 0 {
		t.Fatalf("effects %v after the deadline", eff)
	}
}

// TestSubflowBudgetIsCutToTheParents: outer spends a and sub (2), the
// child asks for 100 but gets the 2 the parent has left (and the parent's
// deadline), runs x and y, and those 2 are charged to the parent, so with
// a budget of 4 the parent cannot run b; with 5 it can.
func TestSubflowBudgetIsCutToTheParents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		budget int64
		ok     bool
	}{{4, false}, {5, true}} {
		r := newRig(t)
		flows := subflowFlows(r.sink, 3)
		outer := flows[1]
		outer.Budget = runtime.Budget{Activations: c.budget, Timeout: time.Hour}
		outer.Nodes[1].Subflow.Budget = runtime.Budget{Activations: 100}
		e, job := startBudgeted(t, r, flows, "outer", `{"note":"hi"}`)
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		child := childOf(t, e, job)
		meta, childMeta := budgetOf(t, r, job), budgetOf(t, r, child)
		if childMeta.MaxActivations != c.budget-2 || !childMeta.Deadline.Equal(meta.Deadline) || meta.Deadline.IsZero() {
			t.Fatalf("budget %d: the child's budget is %+v, the parent's %+v", c.budget, childMeta, meta)
		}
		if n := spentBy(t, r, job); n != 5 {
			t.Fatalf("budget %d: the parent spent %d, want 5 (its 3 and the child's 2)", c.budget, n)
		}
		if !c.ok {
			failedWith(t, e, job, "budget exhausted: activation 5 of a budget of 4")
			continue
		}
		if st, _ := e.Status(context.Background(), job); st.State != runtime.StateSucceeded {
			t.Fatalf("budget %d: %+v", c.budget, st)
		}
	}
}

// TestSubflowRefusedWhenNothingIsLeft: a parent that has spent its whole
// budget cannot start a child.
func TestSubflowRefusedWhenNothingIsLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	flows := subflowFlows(r.sink, 3)
	flows[1].Budget = runtime.Budget{Activations: 2}
	e, job := startBudgeted(t, r, flows, "outer", `{"note":"hi"}`)
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	failedWith(t, e, job, "budget exhausted: no activations left of 2 for subflow inner")
}

// storedBudget is the budget a job's stored meta carries.
type storedBudget struct {
	MaxActivations int64     `json:"maxActivations"`
	Deadline       time.Time `json:"deadline"`
}

// budgetOf reads the budget from job's meta, as inspection shows it.
func budgetOf(t *testing.T, r *rig, job runtime.JobID) storedBudget {
	t.Helper()
	for _, e := range inspected(t, r.store, job).Entries {
		if e.Key == "meta" {
			var meta struct {
				Budget storedBudget `json:"budget"`
			}
			if err := json.Unmarshal(e.Value, &meta); err != nil {
				t.Fatal(err)
			}
			return meta.Budget
		}
	}
	t.Fatalf("job %s has no meta", job)
	return storedBudget{}
}

// TestBudgetRefusesEntries: a budget smaller than the flow's entry nodes
// refuses the entries past it in the start itself, so the job fails on
// them and the others run.
func TestBudgetRefusesEntries(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			twin := &runtime.Flow{Name: "twin", Nodes: []*runtime.FlowNode{{Alias: "a", Runner: noop}, {Alias: "b", Runner: noop}}, Budget: runtime.Budget{Activations: 1}}
			e, job := startBudgeted(t, r, []*runtime.Flow{twin}, "twin", `{}`)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			failedWith(t, e, job, "b@: PolicyDenied: budget exhausted: activation 2 of a budget of 1")
			if n := spentBy(t, r, job); n != 2 {
				t.Fatalf("spent %d activations, want 2 (one refused)", n)
			}
		})
	}
}
