package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestIdempotencyScopeComposesTheKey: a connector's idempotency scope
// decides what its keys are unique within. Two jobs whose inputs share the
// key field but not the partition field reach one node over two edges:
// with ScopeNode all four activations get one key, with ScopeEdge one per
// edge, with ScopePartition one per edge and partition. Each is the key
// IdempotencyKey gives under the scoped node name KeyNode makes.
func TestIdempotencyScopeComposesTheKey(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		for _, tc := range []struct {
			scope    runtime.IdemScope
			distinct int
		}{{runtime.ScopeNode, 1}, {runtime.ScopeEdge, 2}, {runtime.ScopePartition, 4}} {
			t.Run(tc.scope.String(), func(t *testing.T) {
				ctx := context.Background()
				info := runtime.NodeInfo{ID: "t.charge", Version: "1.0.0", Effects: runtime.Effectful, KeySchema: "t.charge@1", KeyFields: []string{"order"}, KeyScope: tc.scope}
				var mu sync.Mutex
				type seen struct{ key, input string }
				var keys []seen
				charge := runtime.Typed(info, func(c *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
					mu.Lock()
					defer mu.Unlock()
					keys = append(keys, seen{c.IdempotencyKey(), string(in)})
					return in, nil
				})
				echo := func(id string) runtime.Runner {
					return runtime.Typed(runtime.NodeInfo{ID: id, Effects: runtime.Pure, Determinism: runtime.Strict}, func(_ *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
				}
				flow := &runtime.Flow{
					Name:  "scoped-" + tc.scope.String(),
					Nodes: []*runtime.FlowNode{{Alias: "a", Runner: echo("t.a")}, {Alias: "b", Runner: echo("t.b")}, {Alias: "charge", Runner: charge}},
					Edges: []runtime.Edge{
						{From: "a", FromPort: "out", To: "charge", PartitionKey: "region"},
						{From: "b", FromPort: "out", To: "charge", PartitionKey: "region"},
					},
				}
				e := New(r.store, Options{Now: r.clock.Now})
				if err := e.Register(flow); err != nil {
					t.Fatal(err)
				}
				inputs := []string{`{"order":"o-1","region":"eu"}`, `{"order":"o-1","region":"us"}`}
				for _, in := range inputs {
					if _, err := e.Start(ctx, flow.Name, json.RawMessage(in)); err != nil {
						t.Fatal(err)
					}
				}
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
				if len(keys) != 4 {
					t.Fatalf("charge ran %d times, want 4", len(keys))
				}
				var distinct []string
				for _, k := range keys {
					if k.key == "" {
						t.Fatal("an activation had no key")
					}
					if !slices.Contains(distinct, k.key) {
						distinct = append(distinct, k.key)
					}
				}
				if len(distinct) != tc.distinct {
					t.Fatalf("%d distinct keys, want %d", len(distinct), tc.distinct)
				}
				// Every key is one a caller computes from the scoped name.
				var want []string
				for _, in := range inputs {
					var region struct{ Region string }
					if err := json.Unmarshal([]byte(in), &region); err != nil {
						t.Fatal(err)
					}
					for _, via := range []string{"a.out", "b.out"} {
						k, err := IdempotencyKey(info, runtime.KeyNode("charge", tc.scope, via, `"`+region.Region+`"`), json.RawMessage(in))
						if err != nil {
							t.Fatal(err)
						}
						want = append(want, k)
					}
				}
				for _, k := range keys {
					if !slices.Contains(want, k.key) {
						t.Errorf("key %s of input %s is none that KeyNode and IdempotencyKey give", k.key, k.input)
					}
				}
			})
		}
	})
}
