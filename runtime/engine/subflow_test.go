package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

type payload struct {
	Note string `json:"note"`
	Big  string `json:"big,omitempty"`
}

func subflowFlows(s *sink, maxDepth int) []*runtime.Flow {
	upper := runtime.Typed(runtime.NodeInfo{ID: "t.upper"}, func(ctx *runtime.Context, _ noParams, in payload) (payload, error) {
		return payload{Note: strings.ToUpper(in.Note), Big: in.Big}, nil
	})
	size := runtime.Typed(runtime.NodeInfo{ID: "t.size"}, func(ctx *runtime.Context, _ noParams, in payload) (map[string]int, error) {
		return map[string]int{"note": len(in.Note), "big": len(in.Big)}, nil
	})
	inner := &runtime.Flow{Name: "inner",
		Nodes: []*runtime.FlowNode{{Alias: "x", Runner: upper}, {Alias: "y", Runner: size}, {Alias: "ignored", Runner: upper}},
		Edges: []runtime.Edge{{From: "x", FromPort: "out", To: "y"}}}
	outer := &runtime.Flow{Name: "outer",
		Nodes: []*runtime.FlowNode{
			{Alias: "a", Runner: upper},
			{Alias: "sub", Subflow: &runtime.Subflow{Flow: "inner", Inputs: []string{"x"}}},
			{Alias: "b", Runner: noop},
		},
		Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "sub"}, {From: "sub", FromPort: "out", To: "b"}}}
	deep := &runtime.Flow{Name: "deep", Nodes: []*runtime.FlowNode{{Alias: "again", Subflow: &runtime.Subflow{Flow: "deep", Inputs: []string{"again"}, MaxDepth: maxDepth}}}}
	return []*runtime.Flow{inner, outer, deep}
}

func startSubflows(t *testing.T, r *rig, flow, input string) (*Engine, runtime.JobID) {
	t.Helper()
	e := New(r.store, Options{})
	for _, f := range subflowFlows(r.sink, 3) {
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

func TestSubflowRunsAsChildJob(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("z", 70<<10) // above the inline limit
	for name, in := range map[string]string{"inline": `{"note":"hi"}`, "blob": `{"note":"hi","big":"` + big + `"}`} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			e, job := startSubflows(t, r, "outer", in)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			st, err := e.Status(context.Background(), job)
			if err != nil || st.State != runtime.StateSucceeded {
				t.Fatalf("%+v %v", st, err)
			}
			var out map[string]map[string]int
			if err := json.Unmarshal(st.Result["b"], &out); err != nil {
				t.Fatalf("result %s: %v", st.Result["b"], err)
			}
			// Only x received the input; ignored (not listed) did not run.
			if out["y"]["note"] != 2 || out["y"]["big"] != len(big)*boolInt(name == "blob") || len(out) != 1 {
				t.Fatalf("child result %v", out)
			}
			// Inspection names the child job of the subflow activation,
			// and the child its parent.
			in, err := e.Inspect(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			var child string
			for _, v := range in.Tree {
				if v.Node == "sub" {
					child = v.Child
				}
			}
			kid, err := runtime.ParseJobID(child)
			if err != nil {
				t.Fatalf("the subflow activation names no child job: %q", child)
			}
			if in, err := e.Inspect(context.Background(), kid); err != nil || in.Parent != job.String() || in.Flow == "" {
				t.Errorf("the child job %s: %+v %v", kid, in, err)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestSubflowDepthLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e, job := startSubflows(t, r, "deep", `{"note":"x"}`)
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(context.Background(), job)
	if st.State != runtime.StateFailed || !strings.Contains(strings.Join(st.Errors, ";"), "deeper than the limit of 3") {
		t.Fatalf("%+v", st)
	}
}

func TestKillCascadesToSubflow(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e, job := startSubflows(t, r, "outer", `{"note":"hi"}`)
	// Run until the child exists: a, and the subflow activation it
	// chains into, which starts the child and parks.
	if _, err := e.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(context.Background(), job, "stop"); err != nil {
		t.Fatal(err)
	}
	if err := drain(t, e); err != nil {
		t.Fatal(err)
	}
	st, _ := e.Status(context.Background(), job)
	if st.State != runtime.StateKilled {
		t.Fatalf("parent %+v", st)
	}
	child, err := e.Status(context.Background(), childOf(t, e, job))
	if err != nil || child.State != runtime.StateKilled {
		t.Fatalf("child %+v %v", child, err)
	}
}

// TestSubflowSurvivesEveryCrashPoint crashes parent and child at every
// point: the parent still ends with the child's result, once, from exactly
// one child job (a replayed parent step finds the child it started).
func TestSubflowSurvivesEveryCrashPoint(t *testing.T) {
	t.Parallel()
	crashEverywhere(t, func(s *sink) []*runtime.Flow { return subflowFlows(s, 3) }, "outer", `{"note":"hi"}`,
		func(t *testing.T, r *rig, job runtime.JobID) {
			st, err := New(r.store, Options{}).Status(context.Background(), job)
			if err != nil || st.State != runtime.StateSucceeded || string(st.Result["b"]) != `{"y":{"big":0,"note":2}}` {
				t.Fatalf("%+v %v (%s)", st, err, st.Result["b"])
			}
			assertOneChild(t, r, job)
		})
}

// TestSubflowUnderDuplicateDelivery delivers every message of a job with a
// subflow 2 to 10 times, late and out of order: a repeated delivery of the
// parked subflow activation finds the child it started and starts no other.
func TestSubflowUnderDuplicateDelivery(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	e := New(r.store, Options{Owner: "w1", Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second})
	for _, f := range subflowFlows(r.sink, 3) {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	job, err := e.Start(context.Background(), "outer", json.RawMessage(`{"note":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	deliverRepeatedly(t, r, e)
	st, err := e.Status(context.Background(), job)
	if err != nil || st.State != runtime.StateSucceeded || string(st.Result["b"]) != `{"y":{"big":0,"note":2}}` {
		t.Fatalf("%+v %v (%s)", st, err, st.Result["b"])
	}
	assertOneChild(t, r, job)
}

// assertOneChild checks that job started exactly one subflow job.
func assertOneChild(t *testing.T, r *rig, job runtime.JobID) {
	t.Helper()
	l, err := ListJobs(context.Background(), r.store, runtime.JobQuery{Subflows: true})
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, s := range l.Jobs {
		if s.Parent == job.String() {
			children++
		}
	}
	if children != 1 {
		t.Fatalf("%d subflow jobs of %s, want exactly one", children, job)
	}
}

// childOf is the one subflow job job started, found in the job listing.
func childOf(t *testing.T, e *Engine, job runtime.JobID) runtime.JobID {
	t.Helper()
	l, err := e.Jobs(context.Background(), runtime.JobQuery{Subflows: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Jobs {
		if s.Parent == job.String() {
			child, err := runtime.ParseJobID(s.Job)
			if err != nil {
				t.Fatal(err)
			}
			return child
		}
	}
	t.Fatalf("job %s started no subflow job", job)
	return runtime.JobID{}
}
