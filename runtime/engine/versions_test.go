package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/telemetry/prommetrics"
)

// pathed is what the versioned flows pass along: the nodes that ran.
type pathed struct {
	Path string `json:"path"`
}

// versionedFlow is version of flow "orders", a chain of nodes; each node
// adds "<node><version>" to the path, and counts its calls in ran.
func versionedFlow(version string, ran *sync.Map, nodes ...string) *runtime.Flow {
	f := &runtime.Flow{Name: "orders", Version: version}
	for i, alias := range nodes {
		step := runtime.Typed(runtime.NodeInfo{ID: "t.step"}, func(ctx *runtime.Context, _ noParams, in pathed) (pathed, error) {
			n, _ := ran.LoadOrStore(alias+version, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return pathed{Path: in.Path + alias + version + " "}, nil
		})
		f.Nodes = append(f.Nodes, &runtime.FlowNode{Alias: alias, Runner: step})
		if i > 0 {
			f.Edges = append(f.Edges, runtime.Edge{From: nodes[i-1], FromPort: "out", To: alias})
		}
	}
	return f
}

// pathOf is the path a finished job of a versioned flow took.
func pathOf(t *testing.T, e *Engine, job runtime.JobID) string {
	t.Helper()
	st, err := e.Status(context.Background(), job)
	if err != nil || st.State != runtime.StateSucceeded {
		t.Fatalf("job %s: %+v (%v), want succeeded", job, st, err)
	}
	for _, out := range st.Result {
		var p pathed
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(p.Path)
	}
	t.Fatalf("job %s has no result", job)
	return ""
}

// TestJobsFinishOnTheirVersion: jobs started on v1 of a flow finish on v1
// after v2 (a node added) is registered, with workers of both versions
// running on one store; new jobs run v2, and a worker that has only the
// other version leaves a job's messages to a worker that has its own.
func TestJobsFinishOnTheirVersion(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var ran sync.Map
		v1 := func() *runtime.Flow { return versionedFlow("1.0.0", &ran, "a", "b") }
		v2 := func() *runtime.Flow { return versionedFlow("1.1.0", &ran, "a", "b", "c") }
		old := New(r.store, Options{Owner: "old", Now: r.clock.Now})
		if err := old.Register(v1()); err != nil {
			t.Fatal(err)
		}
		var v1Jobs []runtime.JobID
		for range 3 {
			job, err := old.Start(ctx, "orders", json.RawMessage(`{"path":""}`))
			if err != nil {
				t.Fatal(err)
			}
			v1Jobs = append(v1Jobs, job)
		}
		// A v1 job part-way through when v2 is deployed.
		if _, err := old.Step(ctx); err != nil {
			t.Fatal(err)
		}

		bothMetrics, freshMetrics := prometheus.NewRegistry(), prometheus.NewRegistry()
		both := New(r.store, Options{Owner: "both", Now: r.clock.Now, Metrics: prommetrics.New(bothMetrics, r.store)})
		for _, f := range []*runtime.Flow{v2(), v1()} {
			if err := both.Register(f); err != nil {
				t.Fatal(err)
			}
		}
		fresh := New(r.store, Options{Owner: "fresh", Now: r.clock.Now, Metrics: prommetrics.New(freshMetrics, r.store)})
		if err := fresh.Register(v2()); err != nil {
			t.Fatal(err)
		}
		newJob, err := both.Start(ctx, "orders", json.RawMessage(`{"path":""}`))
		if err != nil {
			t.Fatal(err)
		}
		pinned, err := both.Start(ctx, "orders@1.0.0", json.RawMessage(`{"path":""}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fresh.Start(ctx, "orders@1.0.0", nil); !errors.Is(err, runtime.ErrFlowVersionMissing) {
			t.Errorf("start of a version the worker lacks: %v, want ErrFlowVersionMissing", err)
		}

		// The worker with only v2 goes first and must leave every v1 job
		// alone; the others take them on when their turn comes first.
		workers := []*Engine{fresh, old, both}
		for round := range 4 {
			for i := range workers {
				e := workers[(round+i)%len(workers)]
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
			}
			r.clock.Advance(2 * time.Second) // messages left for another worker come back
		}
		for _, job := range append(v1Jobs, pinned) {
			if got := pathOf(t, both, job); got != "a1.0.0 b1.0.0" {
				t.Errorf("v1 job %s took %q, want a1.0.0 b1.0.0", job, got)
			}
		}
		if got := pathOf(t, both, newJob); got != "a1.1.0 b1.1.0 c1.1.0" {
			t.Errorf("new job took %q, want v2's a1.1.0 b1.1.0 c1.1.0", got)
		}
		var v1Calls int64
		ran.Range(func(k, v any) bool {
			if strings.HasSuffix(k.(string), "1.0.0") {
				v1Calls += v.(*atomic.Int64).Load()
			}
			return true
		})
		if v1Calls != 8 {
			t.Errorf("v1 nodes ran %d times, want 8 (two nodes, four jobs)", v1Calls)
		}
		st, err := both.Inspect(ctx, v1Jobs[0])
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Version, Hash string }
		for _, e := range st.Entries {
			if e.Key == "meta" {
				json.Unmarshal(e.Value, &meta)
			}
		}
		if meta.Version != "1.0.0" || len(meta.Hash) != 64 {
			t.Errorf("job meta records version %q hash %q", meta.Version, meta.Hash)
		}
		// The v2-only worker counted what it left for others, under v1's
		// definition; the worker with both left nothing.
		if n := metricValue(t, freshMetrics, "flowgen_unserved_deliveries_total", map[string]string{"flow": "orders", "definition": meta.Hash[:16]}); n < 1 {
			t.Errorf("the v2-only worker counted %v unserved deliveries of v1, want some", n)
		}
		if n := metricValue(t, bothMetrics, "flowgen_unserved_deliveries_total", nil); n != 0 {
			t.Errorf("the worker with both versions counted %v unserved deliveries", n)
		}
	})
}

// TestChangedFlowNeedsANewVersion: registering other content under a
// version registered before is refused (its jobs would change course);
// the same content again is fine, and Flows lists the versions newest
// first.
func TestChangedFlowNeedsANewVersion(t *testing.T) {
	t.Parallel()
	var ran sync.Map
	e := New(newRig(t).store, Options{})
	for _, f := range []*runtime.Flow{versionedFlow("1.0.0", &ran, "a"), versionedFlow("1.0.0", &ran, "a"), versionedFlow("1.10.0", &ran, "a"), versionedFlow("1.9.0", &ran, "a")} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	err := e.Register(versionedFlow("1.0.0", &ran, "a", "b"))
	if err == nil || !strings.Contains(err.Error(), "give a changed flow a new version") {
		t.Errorf("changed content under 1.0.0: %v", err)
	}
	var got []string
	for _, v := range e.Flows() {
		got = append(got, v.Version)
		if v.Newest != (v.Version == "1.10.0") {
			t.Errorf("%+v: newest is 1.10.0", v)
		}
	}
	if strings.Join(got, " ") != "1.10.0 1.9.0 1.0.0" {
		t.Errorf("versions %v, want 1.10.0 1.9.0 1.0.0", got)
	}
}
