package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestEntryFoldsOnlyWithoutEffects looks, from another connection, at a
// node's own activity ledger while the node runs. An Effectful node must
// find its leg 2 entry already committed (the durable "launched" marker
// before the call). On PostgreSQL a Pure or ReadOnly node runs inside the
// transaction of its entry, which commits with its steps, so it finds none
// yet, unless its entry took the job's lease (the job's first activation
// on this worker); on bbolt (one writer) every entry commits first.
func TestEntryFoldsOnlyWithoutEffects(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			var job JobID
			seen := map[string]int64{}
			probe := func(alias string, effects Effects) *FlowNode {
				info := NodeInfo{ID: "probe." + alias, Effects: effects, Determinism: BestEffort}
				if effects == Effectful {
					info.KeySchema, info.KeyFields = "probe@1", []string{"n"}
				}
				return &FlowNode{Alias: alias, Runner: Typed(info, func(_ *Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
					for k, v := range counters(t, r.store, job) {
						if strings.HasPrefix(k, "act/"+alias+"@") {
							seen[alias] = v % 100_000_000 // leg 2 entries
						}
					}
					return in, nil
				})}
			}
			flow := &Flow{
				Name:  "probes",
				Nodes: []*FlowNode{probe("first", Pure), probe("pure", Pure), probe("reads", ReadOnly), probe("writes", Effectful)},
				Edges: []Edge{{From: "first", FromPort: "out", To: "pure"}, {From: "pure", FromPort: "out", To: "reads"}, {From: "reads", FromPort: "out", To: "writes"}},
			}
			// The engine reads leases on the store's clock, as in production.
			e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			var err error
			if job, err = e.Start(context.Background(), "probes", json.RawMessage(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			if st, _ := e.Status(context.Background(), job); st.State != StateSucceeded {
				t.Fatalf("job %s: %+v", job, st)
			}
			folded := int64(1)
			if b.name == "postgres" {
				folded = 0
			}
			want := map[string]int64{"first": 1, "pure": folded, "reads": folded, "writes": 1}
			for alias, n := range want {
				if seen[alias] != n {
					t.Errorf("%s saw %d committed leg 2 entries of its own during its call, want %d (all: %v)", alias, seen[alias], n, seen)
				}
			}
			for act, v := range activityLedgers(t, r.store, job) {
				if v%100_000_000 != 1 {
					t.Errorf("%s: activity ledger %d after the job, want one leg 2 entry", act, v)
				}
			}
		})
	}
}
